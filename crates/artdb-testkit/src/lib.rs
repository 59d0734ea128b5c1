//! artdb-testkit (work in progress; see the open issues).

//! artdb-key (work in progress; see the open issues).

//! artdb (work in progress; see the open issues).

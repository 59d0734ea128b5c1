//! artdb-art (work in progress; see the open issues).

//! artdb-bitable (work in progress; see the open issues).

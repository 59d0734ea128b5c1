//! artdb-tidstore (work in progress; see the open issues).

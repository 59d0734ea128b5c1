//! W2's keys and values, shared by the W2 profiling examples: key `i` is `i` as a big-endian
//! u32, its value the low 7 bytes of `i` (a row id).

/// The key of row `i`.
pub fn key(i: u64) -> [u8; 4] {
    (i as u32).to_be_bytes()
}

/// The value of row `i`.
pub fn row_id(i: u64) -> [u8; 7] {
    let b = i.to_be_bytes();
    [b[1], b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// A new database at `DIR/NAME` (any earlier file and log there removed) with an empty table
/// `t`, and its path.
pub fn fresh_db(
    dir: &str,
    name: &str,
) -> Result<(artdb::Db, std::path::PathBuf), Box<dyn std::error::Error>> {
    let path = std::path::Path::new(dir).join(name);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(path.with_extension("artdb.wal"));
    let db = artdb::Db::create(&path, artdb::Options::default())?;
    db.create_table("t")?;
    Ok((db, path))
}

/// Deletes the database at `path` and its log (what `fresh_db` made).
pub fn remove_db(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(path.with_extension("artdb.wal"));
}

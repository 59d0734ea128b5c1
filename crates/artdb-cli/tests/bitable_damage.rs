//! `artdb bitable` on damaged tables: exit code 4 (corruption, as for the database commands),
//! a message naming the damage, never a panic.

mod common;

use common::*;

/// `bitable stats` (and every command that opens the table) on a header whose checksum holds
/// but whose level table is impossible: exit 4 naming the header field. Regression of issue 39
/// item 9: `stats` exited 0 printing the header's figures as if true (a branch level with more
/// pages than the leaves below it), because open checked only that the levels tile the file;
/// and a header that failed at open was exit 1, not the corruption code.
#[test]
fn a_header_with_impossible_levels_is_exit_code_4_for_every_command() {
    let dir = TempDir::new("bitable-impossible-levels");
    let table = dir.file("t.bt");
    let table = path_str(&table);
    let pairs: String = (0..20_000).map(|i| format!("key{i:06}\t{i}\n")).collect();
    let output = artdb_with_input(
        &["bitable", "build", table, "--page-size", "512"],
        pairs.as_bytes(),
    );
    assert!(output.status.success(), "{output:?}");
    let mut bytes = std::fs::read(table).unwrap();
    // The level table at offset 80, 24 bytes a level: start page, page count, used bytes.
    let read = |bytes: &[u8], at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let leaves = read(&bytes, 80 + 8);
    let branches = read(&bytes, 104 + 8);
    assert!(
        leaves > 4 && read(&bytes, 48) >= 3,
        "a table of three levels or more"
    );
    // Move all but two leaf pages to level 1: the levels still tile the file.
    let mut put = |at: usize, value: u64| bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
    put(80 + 8, 2);
    put(80 + 16, 2 * 512);
    put(104, 3);
    put(104 + 8, branches + leaves - 2);
    artdb_bitable::fuzz::reseal(&mut bytes);
    std::fs::write(table, &bytes).unwrap();
    for args in [
        vec!["bitable", "stats", table],
        vec!["bitable", "stats", table, "--json"],
        vec!["bitable", "verify", table],
        vec!["bitable", "get", table, "key000001"],
        vec!["bitable", "scan", table],
    ] {
        let stderr = fails(&args, 4);
        assert!(stderr.contains("`levels`"), "{args:?}: {stderr}");
    }
}

//! Corruption tests: every byte of a small table flipped, and the file truncated at every page
//! boundary. Every outcome is a typed error or correct data; never a panic, never wrong data.
//!
//! With 512-byte pages every byte of the file is covered by a checksum (the header record fills
//! page 0; each page has a CRC32C; each large value has its own), so `verify` must fail after any
//! single flip.

mod common;

use artdb_bitable::{CorruptionKind, Error, Options, Table};
use common::{build, Model};

fn small_model() -> Model {
    // About ten leaf pages, two branch levels, fixed and slotted pages and large values.
    (0u32..300)
        .map(|i| {
            let mut key = vec![b'k'; 36];
            if i % 50 < 40 {
                key.extend_from_slice(&i.to_be_bytes());
            } else {
                key.extend_from_slice(format!("{i:08}").as_bytes());
            }
            let value = if i % 60 == 7 {
                vec![i as u8; 700]
            } else {
                i.to_le_bytes().to_vec()
            };
            (key, value)
        })
        .collect()
}

/// Reads through every path of a fresh table; returns whether a corruption was reported.
fn read_everything(table: &Table, model: &Model) -> bool {
    let mut reported = false;
    for (key, value) in model {
        match table.get(key) {
            Ok(Some(found)) => assert_eq!(found, &value[..], "wrong value, never acceptable"),
            Ok(None) => panic!("a present key vanished without a corruption error"),
            Err(Error::Corruption { .. }) => reported = true,
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    for item in table.iter() {
        match item {
            Ok((key, value)) => assert_eq!(model.get(key).map(|v| &v[..]), Some(value)),
            Err(Error::Corruption { .. }) => {
                reported = true;
                break;
            }
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    reported
}

#[test]
fn every_flipped_byte_is_detected() {
    let model = small_model();
    let (_dir, path) = build(
        &model,
        Options {
            page_size: 512,
            ..Options::default()
        },
    );
    let original = std::fs::read(&path).expect("read");
    assert!(original.len() > 512 * 10, "the table spans many pages");
    let table = Table::open(&path).expect("open");
    assert!(table.levels().len() >= 3 && table.stats().large_value_bytes > 0);
    // Every byte of the header page and of every page header; every 5th byte elsewhere (with
    // ARTDB_TEST_SCALE >= 5, every byte).
    let step = (5 / common::scale() as usize).max(1);
    let positions = (0..original.len()).filter(|at| at < &512 || at % 512 < 40 || at % step == 0);
    for at in positions {
        let mut bytes = original.clone();
        bytes[at] ^= 0x55;
        let table = match Table::from_bytes(bytes) {
            Err(
                Error::Corruption { page: 0, .. }
                | Error::NotABitable
                | Error::UnsupportedVersion { .. },
            ) => {
                assert!(at < 512, "byte {at}: only header damage fails at open");
                continue;
            }
            Err(other) => panic!("byte {at}: unexpected error at open: {other}"),
            Ok(table) => table,
        };
        let reads_reported = read_everything(&table, &model);
        match table.verify() {
            Err(Error::Corruption { page, .. }) => {
                let page_of_byte = (at / 512) as u64;
                let large_area =
                    at as u64 >= table.stats().file_bytes - table.stats().large_value_bytes;
                assert!(
                    large_area || page == page_of_byte,
                    "byte {at}: page {page} reported"
                );
            }
            other => panic!("byte {at}: verify must report the flip, got {other:?}"),
        }
        let large_area = at as u64 >= table.stats().file_bytes - table.stats().large_value_bytes;
        assert!(
            reads_reported || large_area,
            "byte {at}: reads saw no corruption"
        );
    }
}

#[test]
fn truncation_at_every_page_boundary_fails_at_open() {
    let model = small_model();
    let (_dir, path) = build(
        &model,
        Options {
            page_size: 512,
            ..Options::default()
        },
    );
    let original = std::fs::read(&path).expect("read");
    let mut cuts: Vec<usize> = (0..original.len()).step_by(512).collect();
    cuts.extend([1, 7, 8, 511, 513, original.len() - 1]);
    for cut in cuts {
        let result = Table::from_bytes(original[..cut].to_vec());
        assert!(
            matches!(result, Err(Error::Truncated { .. })),
            "cut at {cut}: {:?}",
            result.err()
        );
        let file = path.with_extension("cut");
        std::fs::write(&file, &original[..cut]).expect("write");
        assert!(
            matches!(Table::open(&file), Err(Error::Truncated { .. })),
            "cut at {cut} (file)"
        );
    }
}

#[test]
fn bad_magic_and_version_are_clear_errors() {
    let model = small_model();
    let (_dir, path) = build(&model, Options::default());
    let original = std::fs::read(&path).expect("read");
    let mut bytes = original.clone();
    bytes[0] = b'X';
    assert!(matches!(Table::from_bytes(bytes), Err(Error::NotABitable)));
    let mut bytes = original.clone();
    bytes[8] = 9;
    artdb_bitable::fuzz::reseal(&mut bytes);
    assert!(matches!(
        Table::from_bytes(bytes),
        Err(Error::UnsupportedVersion { found: 9 })
    ));
    let error = Table::from_bytes(original[..100].to_vec())
        .err()
        .expect("truncated");
    assert!(error.to_string().contains("truncated"), "{error}");
}

/// Building into a directory that does not exist (or is a file) names that directory: the
/// error used to be "I/O error while trying to create the table's temporary file: No such file
/// or directory", naming no path (`artdb bitable build /nonexistent/t.bt`, `artdb export`).
#[test]
fn building_in_a_missing_directory_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for parent in [dir.path().join("missing"), file] {
        let error = artdb_bitable::Builder::create(parent.join("t.bt"))
            .err()
            .expect("built");
        let message = error.to_string();
        assert!(message.contains(&parent.display().to_string()), "{message}");
        assert!(matches!(error, Error::Io { .. }), "{error:?}");
    }
}

/// A header whose checksum holds but whose figures no table can have is refused at open,
/// naming the field. Regression of issue 39 item 9: `artdb bitable stats` printed garbage and
/// exited 0 on such a header (a branch level with more pages than the level below, a pair count
/// no leaf level can hold, byte totals past the pages), because open checked only that the
/// levels tile the file, and `stats` and `len` report the header's figures without reading a
/// page.
#[test]
fn a_resealed_header_with_impossible_figures_is_refused_at_open() {
    let model = small_model();
    let (_dir, path) = build(
        &model,
        Options {
            page_size: 512,
            ..Options::default()
        },
    );
    let original = std::fs::read(&path).expect("read");
    let table = Table::open(&path).expect("open");
    let levels = table.levels().to_vec();
    assert!(levels.len() >= 3 && levels[0].page_count > 4, "{levels:?}");
    let stats = table.stats();
    assert!(stats.large_value_count > 0, "{stats:?}");
    let pairs = table.len();
    drop(table);

    // Header offsets (docs/bitable-format.md#table-header-page-0).
    fn put(bytes: &mut [u8], at: usize, value: u64) {
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }
    fn level_at(level: usize) -> usize {
        80 + level * 24
    }
    type Damage = Box<dyn Fn(&mut [u8])>;
    let leaves = levels[0].page_count;
    let cases: Vec<(&str, &str, Damage)> = vec![
        (
            // Pages moved from the leaves to level 1: still tiling the file, but a branch
            // level cannot have more pages than it has children.
            "more branch pages than children",
            "levels",
            Box::new(move |bytes| {
                put(bytes, level_at(0) + 8, 2);
                put(bytes, level_at(0) + 16, 2 * 512);
                put(bytes, level_at(1), 3);
                put(bytes, level_at(1) + 8, levels[1].page_count + leaves - 2);
            }),
        ),
        (
            "a level using fewer bytes than its page headers",
            "levels",
            Box::new(move |bytes| put(bytes, level_at(0) + 16, 0)),
        ),
        (
            "more pairs than the leaves can hold",
            "pair_count",
            Box::new(move |bytes| put(bytes, 16, leaves * 512 + 1)),
        ),
        (
            "fewer pairs than leaves",
            "pair_count",
            Box::new(move |bytes| put(bytes, 16, leaves - 1)),
        ),
        (
            "more key bytes than the largest keys make",
            "key_bytes",
            Box::new(move |bytes| put(bytes, 56, u64::MAX)),
        ),
        (
            "more value bytes than the pages and the large-value area hold",
            "value_bytes",
            Box::new(move |bytes| put(bytes, 64, u64::MAX)),
        ),
        (
            "fewer value bytes than the large values alone",
            "value_bytes",
            Box::new(move |bytes| put(bytes, 64, 0)),
        ),
        (
            "more large values than pairs",
            "large_count",
            Box::new(move |bytes| put(bytes, 72, pairs + 1)),
        ),
        (
            "more large values than the area's bytes can be",
            "large_count",
            Box::new(move |bytes| put(bytes, 72, stats.large_value_bytes)),
        ),
    ];
    for (what, field, damage) in cases {
        let mut bytes = original.clone();
        damage(&mut bytes);
        artdb_bitable::fuzz::reseal(&mut bytes);
        match Table::from_bytes(bytes) {
            Err(Error::Corruption {
                page: 0,
                kind: CorruptionKind::HeaderField(found),
            }) => assert_eq!(found, field, "{what}"),
            Err(other) => panic!("{what}: {other}"),
            Ok(table) => panic!("{what}: opened, stats {:?}", table.stats()),
        }
    }
    // The resealed original still opens: the checks refuse only impossible figures.
    let mut bytes = original.clone();
    artdb_bitable::fuzz::reseal(&mut bytes);
    Table::from_bytes(bytes).expect("the undamaged header opens");
}

/// Symptom: `artdb bitable get` of a FIFO waited for a writer, then called whatever it read an
/// empty table (and a directory failed at the memory map with "No such device"). Cause: open
/// took any path `File::open` accepted and read its length. Fixed: the open does not wait
/// (`O_NONBLOCK`) and refuses what is not a regular file, naming what it is.
#[test]
fn a_fifo_a_directory_or_a_device_is_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `name` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    for (path, what) in [
        (fifo.as_path(), "a FIFO (named pipe)"),
        (dir.path(), "a directory"),
        (std::path::Path::new("/dev/null"), "a character device"),
    ] {
        let error = Table::open(path).err().expect("opened");
        let message = error.to_string();
        assert!(matches!(error, Error::Io { .. }), "{error:?}");
        assert!(
            message.contains(&format!("it is {what}, not a table file")),
            "{message}"
        );
    }
}

//! An empty (0-byte) file, as `touch` and Python's `tempfile.NamedTemporaryFile` make one, is a
//! new database to the commands that write (issue 43 item 13).
//!
//! Symptom: `touch my.artdb && artdb put my.artdb k v` failed with "my.artdb is not an artdb
//! database: it is empty" (exit 4), though sqlite3 and LMDB make a new database of an empty
//! file and the engine's `Db::open_or_create` does. Cause: the CLI chose between `Db::open` and
//! `Db::create` by whether the path existed. Fixed: the commands that write (`put`,
//! `table create`, `shell`, `load`, `restore`, `import`) and `create` make a new database of an
//! empty file; a failed `load` leaves it empty; the commands that read still never write it.

mod common;

use common::*;

fn empty(dir: &TempDir, name: &str) -> String {
    let path = dir.file(name);
    std::fs::write(&path, b"").unwrap();
    path_str(&path).to_string()
}

fn size(file: &str) -> u64 {
    std::fs::metadata(file).unwrap().len()
}

#[test]
fn the_commands_that_write_make_a_database_of_an_empty_file() {
    let dir = TempDir::new("empty-file");

    let file = empty(&dir, "put.artdb");
    ok(&["put", &file, "k", "v"]);
    assert_eq!(ok(&["get", &file, "k"]), "v\n");

    let file = empty(&dir, "table.artdb");
    ok(&["table", "create", &file, "users"]);
    assert!(ok(&["table", "list", &file]).contains("users"));

    let file = empty(&dir, "shell.artdb");
    let out = artdb_with_input(&["shell", &file], b"put a b\n");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(ok(&["get", &file, "a"]), "b\n");

    let file = empty(&dir, "create.artdb");
    ok(&["create", &file]);
    assert!(size(&file) > 0);
    ok(&["verify", &file]);
    // A database that is not empty is never replaced.
    fails(&["create", &file], 1);

    let file = empty(&dir, "load.artdb");
    let out = artdb_with_input(&["load", &file, "--table", "t", "-"], b"b\t2\na\t1\n");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(ok(&["scan", &file, "--table", "t"]), "a\t1\nb\t2\n");

    let copy = empty(&dir, "restore.artdb");
    let dump = ok(&["dump", &file]);
    let out = artdb_with_input(&["restore", &copy], dump.as_bytes());
    assert!(out.status.success(), "{out:?}");
    assert_eq!(ok(&["get", &copy, "--table", "t", "b"]), "2\n");

    let bitable = dir.file("t.bt");
    ok(&["export", &file, path_str(&bitable), "--table", "t"]);
    let imported = empty(&dir, "import.artdb");
    ok(&["import", &imported, path_str(&bitable), "--table", "t"]);
    assert_eq!(ok(&["get", &imported, "--table", "t", "a"]), "1\n");
}

#[test]
fn a_failed_load_leaves_an_empty_file_empty_and_reads_never_write_it() {
    let dir = TempDir::new("empty-file-fail");
    let file = empty(&dir, "db.artdb");
    let out = artdb_with_input(&["load", &file, "-"], b"a\t1\nno-tab\n");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(size(&file), 0);
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".load-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A read command opens read-only: it reports the empty file and leaves it as it is.
    let stderr = fails(&["get", &file, "k"], 4);
    assert!(stderr.contains("empty"), "{stderr}");
    assert_eq!(size(&file), 0);
}

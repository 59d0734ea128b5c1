//! Table commands and which commands create a file (issue 43 item 5).
//!
//! Symptom: no command created or dropped a table (`get` said "create it first", the shell had
//! no `drop`), and `put` refused a missing file while `load`, `restore`, `import` and `shell`
//! created one. Cause: tables were made only as a side effect of writing pairs, and `put`
//! opened with `Db::open`. Fixed by `artdb table create|drop|list`, the shell's `create` and
//! `drop`, and one rule: the commands that write create a missing file, the others never do.

mod common;

use common::*;

#[test]
fn table_create_drop_list_and_the_file_rule() {
    let dir = TempDir::new("table-commands");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    // Read commands never create the file.
    fails(&["table", "list", file], 1);
    fails(&["get", file, "k"], 1);
    assert!(!db.exists());
    ok(&["table", "create", file, "users"]);
    assert!(db.exists());
    fails(&["table", "create", file, "users"], 1);
    ok(&["table", "create", file, "orders"]);
    assert_eq!(
        ok(&["table", "list", file]),
        "orders\t0 keys\nusers\t0 keys\n"
    );
    ok(&["put", file, "--table", "users", "ada", "1"]);
    let list = json(&ok(&["table", "list", file, "--json"]));
    assert_eq!(list[1]["name"], "users");
    assert_eq!(list[1]["keys"], 1);
    ok(&["table", "drop", file, "users"]);
    fails(&["table", "drop", file, "users"], 1);
    assert_eq!(ok(&["table", "list", file]), "orders\t0 keys\n");

    // put creates a missing file, as the other commands that write do.
    let other = dir.file("new.artdb");
    ok(&["put", path_str(&other), "k", "v"]);
    assert_eq!(ok(&["get", path_str(&other), "k"]), "v\n");

    // The shell's create and drop.
    let out = artdb_with_input(
        &["shell", file],
        b"create t\nuse t\nput a b\ntables\ndrop t\ntables\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("t\t1 keys").count(), 1, "{stdout}");
    assert!(
        !ok(&["table", "list", file]).contains("t\t"),
        "table t left"
    );
}

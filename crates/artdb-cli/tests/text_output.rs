//! Text and JSON output of keys and values (issue 43 item 6).
//!
//! Symptom: a value `gr\u{fc}\u{df}e (German)` was printed as `gr\xc3\xbc\xc3\x9fe`, and `--json` gave strings of
//! backslash-x text. Cause: `show_bytes` escaped every byte outside printable ASCII, and JSON
//! output used the same escaped text. Fixed: valid UTF-8 prints as it is (control characters,
//! backslashes and bytes that are not UTF-8 escaped, so `get` reads the output back), and JSON
//! gives `"key"`/`"value"` strings for UTF-8 and `"key_hex"`/`"value_hex"` for other bytes.

mod common;

use common::*;

#[test]
fn utf8_prints_as_it_is_and_json_names_binary_as_hex() {
    let dir = TempDir::new("text-output");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    ok(&["create", file]);
    ok(&[
        "put",
        file,
        "gr\u{fc}\u{df}e",
        "\u{65e5}\u{672c} \\x01 a\\\\b",
    ]);
    ok(&["put", file, "bin\\xff", "\\xc3"]);
    assert_eq!(
        ok(&["get", file, "gr\u{fc}\u{df}e"]),
        "\u{65e5}\u{672c} \\x01 a\\\\b\n"
    );
    let scan = ok(&["scan", file]);
    assert_eq!(
        scan, "bin\\xff\t\\xc3\ngr\u{fc}\u{df}e\t\u{65e5}\u{672c} \\x01 a\\\\b\n",
        "{scan}"
    );
    // What scan prints, get accepts.
    assert_eq!(ok(&["get", file, "bin\\xff"]), "\\xc3\n");

    let got = json(&ok(&["get", file, "gr\u{fc}\u{df}e", "--json"]));
    assert_eq!(got["key"], "gr\u{fc}\u{df}e");
    assert_eq!(got["value"], "\u{65e5}\u{672c} \u{1} a\\b");
    let got = json(&ok(&["get", file, "bin\\xff", "--json"]));
    assert_eq!(got["key_hex"], "62696eff", "{got}");
    assert_eq!(got["value_hex"], "c3", "{got}");
    assert!(got.get("key").is_none(), "{got}");
    let scan = json(&ok(&["scan", file, "--json"]));
    assert_eq!(scan[0]["key_hex"], "62696eff", "{scan}");
    assert_eq!(scan[1]["key"], "gr\u{fc}\u{df}e", "{scan}");
}

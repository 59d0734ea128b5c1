//! The checked-in `include/artdb.h` is what cbindgen makes of the crate's source now.
//!
//! Fails when an entry point, a type or a doc comment changed without regenerating the
//! header. `ARTDB_BLESS_HEADER=1 cargo test -p artdb-capi --test header` writes it anew.

use std::path::Path;

#[test]
fn checked_in_header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .unwrap_or_else(|error| panic!("cbindgen.toml: {error}"));
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .unwrap_or_else(|error| panic!("cbindgen failed: {error}"));
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let path = crate_dir.join("include/artdb.h");
    if std::env::var_os("ARTDB_BLESS_HEADER").is_some() {
        std::fs::write(&path, &generated).unwrap_or_else(|error| panic!("{path:?}: {error}"));
        return;
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "include/artdb.h is stale: regenerate it with \
         `ARTDB_BLESS_HEADER=1 cargo test -p artdb-capi --test header` and commit it"
    );
}

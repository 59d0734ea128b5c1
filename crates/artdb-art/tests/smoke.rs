//! Quick end-to-end checks of the basic operations (the model tests cover them at length).

use artdb_art::Tree;

#[test]
fn insert_get_remove_iterate() {
    let mut tree = Tree::new();
    let keys: Vec<Vec<u8>> = (0u32..2000)
        .map(|i| (i * 7919 % 2000).to_be_bytes().to_vec())
        .collect();
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(tree.insert(key, &(i as u64).to_le_bytes()).unwrap(), None);
    }
    tree.verify().unwrap();
    assert_eq!(tree.len(), 2000);
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(tree.get(key).unwrap(), Some(&(i as u64).to_le_bytes()[..]));
    }
    let mut sorted = keys.clone();
    sorted.sort();
    let got: Vec<Vec<u8>> = tree.iter().map(|r| r.unwrap().0).collect();
    assert_eq!(got, sorted);
    let back: Vec<Vec<u8>> = tree.iter().rev().map(|r| r.unwrap().0).collect();
    sorted.reverse();
    assert_eq!(back, sorted);
    for key in keys.iter().step_by(2) {
        assert!(tree.remove(key).unwrap().is_some());
    }
    tree.verify().unwrap();
    for key in &keys {
        assert!(tree.remove(key).unwrap().is_some() || tree.get(key).unwrap().is_none());
    }
    tree.verify().unwrap();
    assert_eq!(tree.len(), 0);
    assert!(tree.iter().next().is_none());
}

#[test]
fn empty_key_and_prefix_keys() {
    let mut tree = Tree::new();
    for key in [
        &b""[..],
        b"a",
        b"ab",
        b"abc",
        b"abd",
        b"b",
        b"abcdefghijklmnopqrstuvwxyz",
    ] {
        tree.insert(key, key).unwrap();
        tree.verify().unwrap();
    }
    assert_eq!(tree.get(b"").unwrap(), Some(&b""[..]));
    assert_eq!(tree.get(b"ab").unwrap(), Some(&b"ab"[..]));
    let all: Vec<Vec<u8>> = tree.iter().map(|r| r.unwrap().0).collect();
    assert_eq!(all.len(), 7);
    let pre: Vec<Vec<u8>> = tree.prefix(b"ab").map(|r| r.unwrap().0).collect();
    assert_eq!(pre.len(), 4);
    for key in [
        &b"ab"[..],
        b"",
        b"abcdefghijklmnopqrstuvwxyz",
        b"a",
        b"abc",
        b"abd",
        b"b",
    ] {
        assert_eq!(tree.remove(key).unwrap(), Some(key.to_vec()));
        tree.verify().unwrap();
    }
}

"""The mapping interface of db.table(name): every method, key order, buffers, errors."""

import collections.abc
import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import artdb


def test_is_a_mutable_mapping(table):
    assert isinstance(table, collections.abc.MutableMapping)
    assert isinstance(table.keys(), collections.abc.KeysView)


def test_set_get_delete_contains_len(table):
    assert len(table) == 0
    assert not table
    table[b"b"] = b"2"
    table[b"a"] = b"1"
    table[b""] = b"empty key"
    assert len(table) == 3
    assert table
    assert table[b"a"] == b"1"
    assert table[b""] == b"empty key"
    assert b"a" in table and b"zz" not in table
    table[b"a"] = b"one"
    assert table[b"a"] == b"one"
    del table[b"a"]
    assert b"a" not in table
    with pytest.raises(KeyError):
        table[b"a"]
    with pytest.raises(KeyError):
        del table[b"a"]
    assert table.get(b"a") is None
    assert table.get(b"a", b"d") == b"d"
    assert table.get(b"b") == b"2"


def test_order_views_and_reversed(table):
    keys = [bytes([i]) * (i % 3 + 1) for i in range(0, 256, 7)] + [b"", b"\x00", b"\xff\xff"]
    for k in keys:
        table[k] = k + b"!"
    want = sorted(set(keys))
    assert list(table) == want
    assert list(table.keys()) == want
    assert list(table.values()) == [k + b"!" for k in want]
    assert list(table.items()) == [(k, k + b"!") for k in want]
    assert list(reversed(table)) == want[::-1]
    assert list(reversed(table.items())) == [(k, k + b"!") for k in want[::-1]]
    assert len(table.keys()) == len(want) == len(table.items()) == len(table.values())
    assert want[0] in table.keys()
    assert (want[0], want[0] + b"!") in table.items()
    assert (want[0], b"other") not in table.items()
    assert want[0] + b"!" in table.values()
    assert b"nope" not in table.values()
    assert dict(table) == {k: k + b"!" for k in want}
    assert table == {k: k + b"!" for k in want}
    assert table != {}


def test_pop_popitem_setdefault_clear(table):
    table.update({b"a": b"1", b"b": b"2", b"c": b"3"})
    assert table.pop(b"a") == b"1"
    assert table.pop(b"a", None) is None
    with pytest.raises(KeyError):
        table.pop(b"a")
    assert table.popitem() == (b"b", b"2")
    assert table.setdefault(b"c", b"x") == b"3"
    assert table.setdefault(b"d", b"4") == b"4"
    assert dict(table) == {b"c": b"3", b"d": b"4"}
    table.clear()
    assert len(table) == 0
    with pytest.raises(KeyError):
        table.popitem()


def test_buffers_are_accepted(table):
    table[bytearray(b"ba")] = memoryview(b"mv")
    table[memoryview(b"xx")[:1]] = bytearray(b"ba")
    table[array.array("B", [1, 2])] = b"arr"
    assert table[b"ba"] == b"mv"
    assert table[b"x"] == b"ba"
    assert table[b"\x01\x02"] == b"arr"
    assert isinstance(table[b"ba"], bytes)


def test_str_is_refused_naming_encode(table):
    with pytest.raises(TypeError, match=r"\.encode\(\)"):
        table["key"] = b"v"
    with pytest.raises(TypeError, match=r"\.encode\(\)"):
        table[b"key"] = "v"
    with pytest.raises(TypeError, match=r"\.encode\(\)"):
        table["key"]
    with pytest.raises(TypeError, match="not int"):
        table[5] = b"v"
    with pytest.raises(TypeError, match="not NoneType"):
        table.get(None)
    with pytest.raises(TypeError, match=r"\.encode\(\)"):
        table.update(a=b"1")


def test_key_too_large(table):
    with pytest.raises(artdb.KeyTooLargeError, match="longer than the limit"):
        table[b"k" * 5000] = b"v"


def test_range(table):
    for i in range(100):
        table[b"%03d" % i] = b"%d" % i
    assert [k for k, _ in table.range(b"010", b"013")] == [b"010", b"011", b"012"]
    assert [k for k, _ in table.range(b"010", b"013", inclusive_end=True)] == [
        b"010", b"011", b"012", b"013"]
    assert [k for k, _ in table.range(b"010", b"013", reverse=True)] == [b"012", b"011", b"010"]
    assert [k for k, _ in table.range(b"0105", b"013")] == [b"011", b"012"]
    assert len(list(table.range())) == 100
    assert [k for k, _ in table.range(end=b"002")] == [b"000", b"001"]
    assert [k for k, _ in table.range(start=b"098")] == [b"098", b"099"]
    assert [k for k, _ in table.range(start=b"098", reverse=True)] == [b"099", b"098"]
    assert list(table.range(b"050", b"040")) == []
    assert list(table.range(b"050", b"050")) == []
    assert list(table.range(b"050", b"050", inclusive_end=True)) == [(b"050", b"50")]
    it = table.range(b"090")
    assert iter(it) is it
    assert next(it) == (b"090", b"90")


def test_prefix(table):
    for k in [b"a", b"ab", b"abc", b"abd", b"ac", b"b", b"a\xff", b"a\xff\xff", b"b\x00"]:
        table[k] = k
    assert [k for k, _ in table.prefix(b"ab")] == [b"ab", b"abc", b"abd"]
    assert [k for k, _ in table.prefix(b"a")] == [
        b"a", b"ab", b"abc", b"abd", b"ac", b"a\xff", b"a\xff\xff"]
    assert [k for k, _ in table.prefix(b"a\xff")] == [b"a\xff", b"a\xff\xff"]
    assert [k for k, _ in table.prefix(b"ab", reverse=True)] == [b"abd", b"abc", b"ab"]
    assert len(list(table.prefix(b""))) == 9
    assert list(table.prefix(b"zz")) == []


def test_iterators_hold_one_snapshot(table):
    for i in range(3000):
        table[i.to_bytes(4, "big")] = b"old"
    it = iter(table.items())
    first = next(it)
    table[(5000).to_bytes(4, "big")] = b"new"
    table[(10).to_bytes(4, "big")] = b"changed"
    rest = list(it)
    assert len(rest) + 1 == 3000
    assert all(v == b"old" for _, v in [first] + rest)


def test_update_and_load(db):
    t = db.table("t", create=True)
    # Unsorted with a repeated key: sorted in Rust, the last value wins (as in dict).
    assert t.update([(b"c", b"3"), (b"a", b"1"), (b"b", b"2"), (b"a", b"1b")]) == 3
    assert list(t.items()) == [(b"a", b"1b"), (b"b", b"2"), (b"c", b"3")]
    assert t.update({b"d": b"4", b"a": b"x"}) == 2
    assert t[b"a"] == b"x" and t[b"d"] == b"4"
    assert t.update() == 0
    with pytest.raises(artdb.TableNotEmptyError, match=r"use Table\.update"):
        t.load([(b"z", b"z")])
    u = db.table("u", create=True)
    pairs = [(i.to_bytes(4, "little"), b"v%d" % i) for i in range(20000)]
    assert u.load(iter(pairs)) == 20000
    assert list(u.items()) == sorted(pairs)
    with pytest.raises(TypeError, match="pairs"):
        db.table("v", create=True).update([b"ab"])
    with pytest.raises(TypeError, match=r"\.encode\(\)"):
        db.table("w", create=True).load([("a", b"1")])


# Keys from a small alphabet so that repeats are common, often in different blocks of the
# gathering (it takes 64 pairs at a time); values of any size, so that the buffer's size
# estimate from the first block is sometimes far off.
PAIRS = st.lists(
    st.tuples(st.binary(min_size=0, max_size=3), st.binary(min_size=0, max_size=300)),
    max_size=400,
)


@settings(max_examples=60, deadline=None)
@given(PAIRS, st.sampled_from(["list", "tuple", "generator", "dict"]), st.booleans())
def test_load_and_update_keep_the_last_value_of_each_key(tmp_path_factory, pairs, shape, load):
    source = {
        "list": lambda: list(pairs),
        "tuple": lambda: tuple(pairs),
        "generator": lambda: (pair for pair in pairs),
        "dict": lambda: dict(pairs),
    }[shape]()
    model = dict(pairs)
    with artdb.open(tmp_path_factory.mktemp("db") / "t.artdb", durability="nosync") as db:
        t = db.table("t", create=True)
        if not load:
            t[b"\xff" * 4] = b"there before"
            model[b"\xff" * 4] = b"there before"
        written = t.load(source) if load else t.update(source)
        assert written == len(dict(pairs))
        assert list(t.items()) == sorted(model.items())


def test_repeated_empty_keys_keep_the_last_value(table):
    # Empty pairs take no room in the gathered buffer: two pairs can start at the same offset.
    assert table.update([(b"", b""), (b"", b"\x00")]) == 1
    assert table[b""] == b"\x00"
    assert table.update([(b"", b"\x01"), (b"", b""), (b"a", b""), (b"", b"")]) == 2
    assert table[b""] == b"" and table[b"a"] == b""


def test_a_bad_pair_past_the_first_blocks_writes_nothing(table):
    pairs = [(b"%05d" % i, b"v") for i in range(300)]
    pairs.insert(200, (b"k", "a str value"))
    with pytest.raises(TypeError, match=r"\.encode\(\)"):
        table.load(pairs)
    with pytest.raises(TypeError, match="pairs"):
        table.update(pairs[:150] + [b"not a pair"] + pairs[150:])
    assert len(table) == 0


def test_update_missing_table(db):
    t = db.table("t", create=True)
    db.drop_table("t")
    with pytest.raises(artdb.TableNotFoundError):
        t.update([(b"a", b"1")])
    with pytest.raises(artdb.TableNotFoundError):
        t.update([])

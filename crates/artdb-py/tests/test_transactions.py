"""Write transactions, read snapshots and db.transact: commit, abort, read-your-writes, conflicts,
isolation, finished transactions."""

import threading

import pytest

import artdb


def test_write_commits_on_exit_and_reads_its_own_writes(db, table):
    table.update({b"a": b"1", b"b": b"2"})
    with db.write() as tx:
        assert tx.active and tx.durability == "nosync" and tx.isolation == "snapshot"
        t = tx.table("t")
        t[b"c"] = b"3"
        del t[b"a"]
        assert t[b"c"] == b"3" and b"a" not in t
        assert len(t) == 2
        assert list(t.items()) == [(b"b", b"2"), (b"c", b"3")]
        assert list(reversed(t)) == [b"c", b"b"]
        assert list(t.range(b"b", b"c", inclusive_end=True)) == [(b"b", b"2"), (b"c", b"3")]
        assert list(t.prefix(b"c")) == [(b"c", b"3")]
        # Not visible outside before commit.
        assert b"c" not in table and b"a" in table
    assert not tx.active
    assert dict(table) == {b"b": b"2", b"c": b"3"}


def test_exception_in_block_aborts(db, table):
    table[b"a"] = b"1"
    with pytest.raises(RuntimeError, match="boom"):
        with db.write() as tx:
            tx.table("t")[b"a"] = b"changed"
            tx.table("t")[b"new"] = b"x"
            raise RuntimeError("boom")
    assert dict(table) == {b"a": b"1"}


def test_explicit_commit_abort_and_finished_transaction_raises(db, table):
    tx = db.write()
    t = tx.table("t")
    t[b"k"] = b"v"
    tx.abort()
    tx.abort()  # idempotent
    assert b"k" not in table
    for call in [lambda: t[b"k"], lambda: t.__setitem__(b"k", b"v"), lambda: len(t),
                 lambda: list(t), lambda: tx.table("t"), lambda: tx.commit()]:
        with pytest.raises(artdb.TransactionClosedError, match="start a new one"):
            call()
    tx2 = db.write()
    it = tx2.table("t").items()
    tx2.table("t")[b"k"] = b"v"
    tx2.commit()
    assert table[b"k"] == b"v"
    with pytest.raises(artdb.TransactionClosedError):
        tx2.commit()
    with pytest.raises(artdb.TransactionClosedError):
        list(it)


def test_table_errors_in_transaction(db, table):
    with db.write() as tx:
        with pytest.raises(artdb.TableNotFoundError):
            tx.table("missing")
        with pytest.raises(TypeError, match=r"\.encode\(\)"):
            tx.table("t")["k"] = b"v"
        with pytest.raises(KeyError):
            del tx.table("t")[b"absent"]
        with pytest.raises(artdb.KeyTooLargeError):
            tx.table("t")[b"k" * 5000] = b"v"


def test_transaction_mapping_methods(db, table):
    table.update({b"a": b"1", b"b": b"2", b"c": b"3"})
    with db.write() as tx:
        t = tx.table("t")
        assert t.pop(b"a") == b"1"
        assert t.pop(b"a", b"gone") == b"gone"
        assert t.popitem() == (b"b", b"2")
        assert t.setdefault(b"c", b"x") == b"3"
        assert t.setdefault(b"d", b"4") == b"4"
        assert t.update([(b"f", b"6"), (b"e", b"5")]) == 2
        assert t.load([(b"g", b"7")]) == 1
        assert dict(t) == {b"c": b"3", b"d": b"4", b"e": b"5", b"f": b"6", b"g": b"7"}
        t.clear()
        assert len(t) == 0
    assert len(table) == 0


def test_conflict_first_committer_wins(db, table):
    table[b"x"] = b"0"
    tx1 = db.write()
    tx2 = db.write()
    tx1.table("t")[b"x"] = b"1"
    tx2.table("t")[b"x"] = b"2"
    tx1.commit()
    with pytest.raises(artdb.ConflictError, match="run it again"):
        tx2.commit()
    assert table[b"x"] == b"1"
    assert not tx2.active


def test_snapshot_isolation_allows_write_skew_serializable_does_not(db, table):
    for isolation, second_commits in [("snapshot", True), ("serializable", False)]:
        table.update({b"a": b"1", b"b": b"1"})
        tx1 = db.write(isolation=isolation)
        tx2 = db.write(isolation=isolation)
        assert tx1.isolation == isolation
        # Each reads both and writes the other one (write skew).
        assert tx1.table("t")[b"a"] == b"1" and tx1.table("t")[b"b"] == b"1"
        assert tx2.table("t")[b"a"] == b"1" and tx2.table("t")[b"b"] == b"1"
        tx1.table("t")[b"a"] = b"0"
        tx2.table("t")[b"b"] = b"0"
        tx1.commit()
        if second_commits:
            tx2.commit()
        else:
            with pytest.raises(artdb.ConflictError):
                tx2.commit()
    with pytest.raises(ValueError, match="isolation"):
        db.write(isolation="chaos")


def test_transact_retries_conflicts(db, table):
    table[b"n"] = b"0"
    calls = []

    def increment(tx):
        t = tx.table("t")
        value = int(t[b"n"])
        calls.append(value)
        if len(calls) == 1:
            # Someone else commits in between, once.
            table[b"n"] = b"100"
        t[b"n"] = b"%d" % (value + 1)
        return value + 1

    assert db.transact(increment) == 101
    assert len(calls) == 2
    assert table[b"n"] == b"101"

    def always_conflicts(tx):
        tx.table("t")[b"n"] = b"x"
        table[b"n"] = b"y"

    with pytest.raises(artdb.ConflictError):
        db.transact(always_conflicts, retries=2)

    def fails(tx):
        tx.table("t")[b"n"] = b"never"
        raise ValueError("no")

    with pytest.raises(ValueError):
        db.transact(fails)
    assert table[b"n"] == b"y"


def test_transact_counter_from_threads(db, table):
    table[b"n"] = b"0"

    def bump(tx):
        t = tx.table("t")
        t[b"n"] = b"%d" % (int(t[b"n"]) + 1)

    def worker():
        for _ in range(25):
            db.transact(bump, retries=1000)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert table[b"n"] == b"100"


def test_read_snapshot(db, table):
    table.update({b"a": b"1"})
    with db.read() as snap:
        assert snap.active
        t = snap.table("t")
        table[b"a"] = b"2"
        table[b"b"] = b"3"
        assert t[b"a"] == b"1" and b"b" not in t and len(t) == 1
        assert list(t.items()) == [(b"a", b"1")]
        assert snap.table_names() == ["t"]
        with pytest.raises(TypeError, match="read-only"):
            t[b"x"] = b"1"
        with pytest.raises(TypeError, match="read-only"):
            t.update({b"x": b"1"})
        with pytest.raises(artdb.TableNotFoundError):
            snap.table("missing")
    assert not snap.active
    with pytest.raises(artdb.TransactionClosedError):
        t[b"a"]
    with pytest.raises(artdb.TransactionClosedError):
        snap.table("t")


def test_durability_per_transaction(path):
    with artdb.open(path, durability="nosync") as db:
        db.create_table("t")
        syncs = db.stats()["log"]["syncs"]
        with db.write() as tx:
            assert tx.durability == "nosync"
            tx.table("t")[b"a"] = b"1"
        assert db.stats()["log"]["syncs"] == syncs
        with db.write(durability="sync") as tx:
            assert tx.durability == "sync"
            tx.table("t")[b"k"] = b"v"
        log = db.stats()["log"]
        assert log["syncs"] > syncs
        assert log["commits"] >= 2 and log["records"] >= 2 and log["last_lsn"] > 0
        with pytest.raises(ValueError):
            db.write(durability="maybe")


def test_transaction_creates_and_drops_tables(db, table):
    """Symptom: a table could be created or dropped only by the database (its own transaction),
    not inside `with db.write() as tx`, though Rust's Transaction has create_table and
    drop_table. Cause: WriteTransaction did not expose them."""
    table[b"k"] = b"v"
    with db.write() as tx:
        tx.create_table("new")
        tx.table("new")[b"a"] = b"1"
        assert tx.table_names() == ["new", "t"]
        assert db.table_names() == ["t"]  # not visible outside before commit
        with pytest.raises(artdb.TableExistsError):
            tx.create_table("t")
        tx.drop_table("t")
        assert tx.table_names() == ["new"]
        with pytest.raises(artdb.TableNotFoundError):
            tx.table("t")
        with pytest.raises(artdb.TableNotFoundError):
            tx.drop_table("t")
        assert dict(table) == {b"k": b"v"}  # dropped only at commit
    assert db.table_names() == ["new"]
    assert dict(db.table("new")) == {b"a": b"1"}
    with pytest.raises(RuntimeError, match="boom"):
        with db.write() as tx:
            tx.create_table("aborted")
            tx.drop_table("new")
            raise RuntimeError("boom")
    assert db.table_names() == ["new"]
    with db.write() as tx:  # dropped and created again in one transaction: empty
        tx.table("new")[b"b"] = b"2"
        tx.drop_table("new")
        tx.create_table("new")
        assert len(tx.table("new")) == 0
    assert dict(db.table("new")) == {}
    with pytest.raises(artdb.InvalidTableNameError):
        db.write().create_table("")


def test_concurrent_creates_of_one_table_one_commits(db):
    """Symptom and cause as above; two transactions creating one name must not both commit."""
    first, second = db.write(), db.write()
    first.create_table("x")
    second.create_table("x")
    first.table("x")[b"from"] = b"first"
    first.commit()
    with pytest.raises(artdb.ConflictError):
        second.commit()
    assert dict(db.table("x")) == {b"from": b"first"}


def test_iterators_survive_a_drop_in_their_transaction(db, table):
    """Iterators of a transaction show the table as it was when they were made: a drop_table in
    the same transaction (and a new table of that name) must not end or change them."""
    table.update({b"%02d" % i: b"v%d" % i for i in range(40)})
    expected = [(b"%02d" % i, b"v%d" % i) for i in range(40)]
    with db.write() as tx:
        t = tx.table("t")
        forward, backward, untouched = iter(t.items()), reversed(t), t.range(b"10", b"20")
        assert next(forward) == expected[0] and next(backward) == b"39"
        tx.drop_table("t")
        tx.create_table("t")
        tx.table("t")[b"05"] = b"new"
        tx.table("t")[b"zz"] = b"new"
        assert [next(forward)] + list(forward) == expected[1:]
        assert list(backward) == [k for k, _ in expected[:39]][::-1]
        assert list(untouched) == expected[10:20]
        assert dict(tx.table("t")) == {b"05": b"new", b"zz": b"new"}
    assert dict(table) == {b"05": b"new", b"zz": b"new"}

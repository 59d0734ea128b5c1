"""What an iterator shows while its table changes: the table as it was when the iterator was made,
in a write transaction (its own later writes excluded) as for `db.table(...)` and snapshots.

A hypothesis state machine holds one write transaction open over a table, makes iterators of
every kind at random moments (keys, values, items; forward and reversed; ranges and prefixes),
steps them a few pairs at a time between writes of every kind (set, delete, pop, popitem,
setdefault, update, clear; and writes aimed just past an iterator's position), and checks each
pair against the model's view at the iterator's creation."""

import os
import shutil
import tempfile

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import artdb

# A small alphabet so that keys collide, share prefixes and are prefixes of each other.
KEYS = st.binary(max_size=4).map(lambda b: bytes(x % 4 for x in b))
VALUES = st.binary(max_size=6)
END = object()


def _inside(key, start, end, inclusive):
    if start is not None and key < start:
        return False
    if end is not None and (key > end if inclusive else key >= end):
        return False
    return True


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("count", [16, 40, 200, 1500])
def test_inserting_next_to_each_key_while_iterating_a_transaction_table(db, table, count, reverse):
    """Regression (issue 39 item 5): iterating `tx.table("t")` while inserting, for each key, a
    key just past it showed some of the inserted keys (40 keys iterated as 41, 16 as 17, 200 as
    202). The iterator reads the transaction's current view in batches, each re-seeking past the
    last key the previous batch returned; a key inserted just after that last key lay inside the
    next batch. Now the iterator shows the view of its creation, as the autocommit table's
    snapshot iterators do."""
    table.update({b"k%06d" % (2 * i): b"v" for i in range(count)})
    step = -1 if reverse else 1
    with db.write() as tx:
        t = tx.table("t")
        seen = []
        for key in (reversed(t) if reverse else t):
            seen.append(key)
            t[b"k%06d" % (int(key[1:]) + step)] = b"new"
        assert seen == sorted(table.keys(), reverse=reverse)
        assert len(t) == 2 * count
    # The autocommit table gives the same answer (its iterator holds an engine snapshot).
    table.clear()
    table.update({b"k%06d" % (2 * i): b"v" for i in range(count)})
    seen = []
    for key in (reversed(table) if reverse else table):
        seen.append(key)
        table[b"k%06d" % (int(key[1:]) + step)] = b"new"
    assert len(seen) == count


def test_an_iterator_shows_values_and_deletions_as_of_its_creation(db, table):
    table.update({b"a": b"1", b"b": b"2", b"c": b"3"})
    with db.write() as tx:
        t = tx.table("t")
        items = iter(t.items())
        t[b"a"] = b"changed before the first next"
        assert next(items) == (b"a", b"1")
        del t[b"b"]
        t[b"c"] = b"changed"
        t[b"d"] = b"new"
        assert list(items) == [(b"b", b"2"), (b"c", b"3")]
        # A new iterator sees the transaction's view now.
        assert list(t.items()) == [(b"a", b"changed before the first next"), (b"c", b"changed"),
                                   (b"d", b"new")]
        # Writes made before an iterator's creation are part of what it shows.
        t[b"e"] = b"5"
        later = t.range(b"c")
        t.clear()
        assert list(later) == [(b"c", b"changed"), (b"d", b"new"), (b"e", b"5")]
        assert len(t) == 0


class IterationModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp()
        self.db = artdb.open(os.path.join(self.dir, "iteration.artdb"), durability="nosync")
        self.auto = self.db.table("t", create=True)
        self.committed = {}
        self.begin()

    def begin(self):
        self.tx = self.db.write()
        self.t = self.tx.table("t")
        self.model = dict(self.committed)
        # [iterator, what it must yield in order, how many it has yielded, the keys of those]
        self.iterators = []

    def teardown(self):
        for entry in self.iterators:
            self.check_steps(entry, None)
        self.tx.abort()
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def check_steps(self, entry, steps):
        iterator, expected, done, _ = entry
        while steps is None or steps > 0:
            got = next(iterator, END)
            want = expected[done] if done < len(expected) else END
            assert got == want, f"pair {done} of {expected}"
            if got is END:
                break
            done += 1
            entry[2] = done
            if steps is not None:
                steps -= 1

    # The committed table the transaction starts from: big enough that iterators cross the
    # batch boundaries (16, then 64 more, then 256 more pairs).
    @rule(pairs=st.dictionaries(KEYS, VALUES, max_size=120))
    def commit_and_restart(self, pairs):
        self.t.update(pairs)
        self.model.update(pairs)
        self.tx.commit()
        self.committed = dict(self.model)
        assert dict(self.auto.items()) == self.committed
        self.begin()

    @rule(start=st.none() | KEYS, end=st.none() | KEYS, inclusive=st.booleans(),
          reverse=st.booleans(), mode=st.sampled_from(["keys", "values", "items", "iter"]))
    def make_range_iterator(self, start, end, inclusive, reverse, mode):
        pairs = sorted((k, v) for k, v in self.model.items() if _inside(k, start, end, inclusive))
        if reverse:
            pairs.reverse()
        keys = [k for k, _ in pairs]
        if mode == "iter":
            iterator = reversed(self.t) if reverse else iter(self.t)
            keys = sorted(self.model, reverse=reverse)
            expected = keys
        else:
            iterator = self.t.range(start, end, inclusive_end=inclusive, reverse=reverse)
            if mode == "keys":
                iterator = (k for k, _ in iterator)
                expected = keys
            elif mode == "values":
                iterator = (v for _, v in iterator)
                expected = [v for _, v in pairs]
            else:
                expected = pairs
        self.iterators.append([iterator, expected, 0, keys])

    @rule(prefix=KEYS, reverse=st.booleans(), mode=st.sampled_from(["keys", "values", "items"]))
    def make_view_or_prefix_iterator(self, prefix, reverse, mode):
        if mode == "items":
            pairs = sorted((k, v) for k, v in self.model.items() if k.startswith(prefix))
            expected = pairs[::-1] if reverse else pairs
            keys = [k for k, _ in expected]
            self.iterators.append([self.t.prefix(prefix, reverse=reverse), expected, 0, keys])
            return
        view = self.t.keys() if mode == "keys" else self.t.values()
        pairs = sorted(self.model.items(), reverse=reverse)
        expected = [k if mode == "keys" else v for k, v in pairs]
        keys = [k for k, _ in pairs]
        self.iterators.append([reversed(view) if reverse else iter(view), expected, 0, keys])

    @precondition(lambda self: self.iterators)
    @rule(index=st.integers(min_value=0), steps=st.integers(min_value=1, max_value=40))
    def step(self, index, steps):
        self.check_steps(self.iterators[index % len(self.iterators)], steps)

    @rule(key=KEYS, value=VALUES)
    def put(self, key, value):
        self.t[key] = value
        self.model[key] = value

    # A write just past where an iterator stands (the next batch's first key, or close to it).
    @precondition(lambda self: self.iterators)
    @rule(index=st.integers(min_value=0), value=VALUES, delete=st.booleans())
    def write_next_to_an_iterator(self, index, value, delete):
        _, _, done, keys = self.iterators[index % len(self.iterators)]
        if not keys:
            return
        # The last key returned, or the first when none was: after it and (for a reversed
        # iterator) before it.
        key = keys[max(done - 1, 0)]
        for near in (key + b"\x00", key[:-1]):
            if delete:
                self.t.pop(near, None)
                self.model.pop(near, None)
            else:
                self.t[near] = value
                self.model[near] = value

    @rule(key=KEYS)
    def delete(self, key):
        assert self.t.pop(key, None) == self.model.pop(key, None)

    @rule(key=KEYS, value=VALUES)
    def setdefault(self, key, value):
        assert self.t.setdefault(key, value) == self.model.setdefault(key, value)

    @precondition(lambda self: self.model)
    @rule()
    def popitem(self):
        key, value = self.t.popitem()
        assert key == min(self.model)
        assert self.model.pop(key) == value

    @rule(pairs=st.lists(st.tuples(KEYS, VALUES), max_size=20))
    def update(self, pairs):
        self.t.update(pairs)
        self.model.update(pairs)

    @rule()
    def clear(self):
        self.t.clear()
        self.model.clear()

    @invariant()
    def the_transaction_sees_the_model(self):
        assert len(self.t) == len(self.model)
        assert list(self.t.items()) == sorted(self.model.items())


IterationModel.TestCase.settings = settings(max_examples=80, stateful_step_count=50,
                                            deadline=None)
test_iteration_model = IterationModel.TestCase

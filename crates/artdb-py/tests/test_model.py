"""A hypothesis state machine against a sorted dict model: puts, deletes, gets, ranges, prefixes,
transactions that commit or raise, bulk updates, checkpoints, close and reopen."""

import tempfile
import os
import shutil

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import artdb

# A small alphabet so that keys collide, share prefixes and are prefixes of each other.
KEYS = st.binary(max_size=4).map(lambda b: bytes(x % 4 for x in b))
VALUES = st.binary(max_size=12)


class Aborted(Exception):
    pass


class TableModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "model.artdb")
        self.db = artdb.open(self.path, durability="nosync")
        self.table = self.db.table("t", create=True)
        self.model = {}

    def teardown(self):
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(key=KEYS, value=VALUES)
    def put(self, key, value):
        self.table[key] = value
        self.model[key] = value

    @rule(key=KEYS)
    def delete(self, key):
        if key in self.model:
            del self.table[key]
            del self.model[key]
        else:
            try:
                del self.table[key]
            except KeyError:
                pass
            else:
                raise AssertionError("deleting an absent key did not raise KeyError")

    @rule(key=KEYS)
    def get(self, key):
        assert self.table.get(key) == self.model.get(key)
        assert (key in self.table) == (key in self.model)

    @rule(start=st.none() | KEYS, end=st.none() | KEYS, inclusive=st.booleans(),
          reverse=st.booleans())
    def range(self, start, end, inclusive, reverse):
        def inside(k):
            if start is not None and k < start:
                return False
            if end is not None and (k > end if inclusive else k >= end):
                return False
            return True
        want = sorted((k, v) for k, v in self.model.items() if inside(k))
        if reverse:
            want.reverse()
        got = list(self.table.range(start, end, inclusive_end=inclusive, reverse=reverse))
        assert got == want

    @rule(prefix=KEYS, reverse=st.booleans())
    def prefix(self, prefix, reverse):
        want = sorted((k, v) for k, v in self.model.items() if k.startswith(prefix))
        if reverse:
            want.reverse()
        assert list(self.table.prefix(prefix, reverse=reverse)) == want

    @rule(ops=st.lists(st.tuples(KEYS, st.none() | VALUES), max_size=8), commit=st.booleans())
    def transaction(self, ops, commit):
        staged = dict(self.model)
        try:
            with self.db.write() as tx:
                t = tx.table("t")
                for key, value in ops:
                    if value is None:
                        t.pop(key, None)
                        staged.pop(key, None)
                    else:
                        t[key] = value
                        staged[key] = value
                    assert t.get(key) == staged.get(key)
                assert list(t.items()) == sorted(staged.items())
                assert len(t) == len(staged)
                if not commit:
                    raise Aborted()
        except Aborted:
            return
        self.model = staged

    @rule(pairs=st.lists(st.tuples(KEYS, VALUES), max_size=20))
    def update(self, pairs):
        self.table.update(pairs)
        for key, value in pairs:
            self.model[key] = value

    @rule()
    def checkpoint(self):
        self.db.checkpoint()

    @rule()
    def reopen(self):
        self.db.close()
        self.db = artdb.open(self.path, durability="nosync")
        self.table = self.db.table("t")

    @precondition(lambda self: len(self.model) > 0)
    @rule()
    def popitem(self):
        key, value = self.table.popitem()
        assert key == min(self.model)
        assert self.model.pop(key) == value

    @invariant()
    def same_contents(self):
        assert len(self.table) == len(self.model)
        assert list(self.table.items()) == sorted(self.model.items())


TableModel.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
test_table_model = TableModel.TestCase

"""Fixtures: a fresh database file per test (durability "nosync" unless a test asks)."""

import pytest

import artdb


@pytest.fixture
def path(tmp_path):
    return tmp_path / "test.artdb"


@pytest.fixture
def db(path):
    database = artdb.open(path, durability="nosync")
    yield database
    database.close()


@pytest.fixture
def table(db):
    return db.table("t", create=True)

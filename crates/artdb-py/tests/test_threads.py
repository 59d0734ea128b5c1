"""Several Python threads read while one writes (the GIL is released around scans and writes):
no crash, and every read sees a consistent state."""

import threading
import time

import artdb

N = 2000


def test_readers_while_a_writer_writes(db):
    t = db.table("t", create=True)
    # Invariant kept by the writer: every value of a snapshot equals that snapshot's generation,
    # and all N keys are present.
    t.load((i.to_bytes(4, "big"), b"0") for i in range(N))
    stop = threading.Event()
    errors = []

    def writer():
        try:
            for generation in range(1, 30):
                with db.write() as tx:
                    w = tx.table("t")
                    w.update((i.to_bytes(4, "big"), b"%d" % generation) for i in range(N))
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            stop.set()

    def reader():
        try:
            scans = 0
            while not stop.is_set() or scans < 3:
                with db.read() as snap:
                    values = list(snap.table("t").values())
                assert len(values) == N
                assert len(set(values)) == 1, "a scan saw two generations"
                items = list(t.range(b"\x00\x00\x00\x10", b"\x00\x00\x00\x20"))
                assert [k for k, _ in items] == [i.to_bytes(4, "big") for i in range(16, 32)]
                assert t[b"\x00\x00\x00\x05"] is not None
                scans += 1
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert set(t.values()) == {b"29"}


def test_close_from_another_thread_while_iterating(path):
    db = artdb.open(path, durability="nosync")
    t = db.table("t", create=True)
    t.load((i.to_bytes(4, "big"), b"x" * 50) for i in range(50000))
    seen = []
    failures = []

    def scan():
        try:
            for key in t:
                seen.append(key)
        except artdb.ClosedError:
            pass
        except Exception as error:  # pragma: no cover
            failures.append(error)

    thread = threading.Thread(target=scan)
    thread.start()
    db.close()
    thread.join()
    assert failures == []
    artdb.open(path).close()


def test_bulk_load_releases_the_gil(db):
    """A pure-Python thread keeps running in the second half of a bulk load (the sort and the
    write happen there). Were the GIL held throughout, the thread could run at most in the one
    switch interval (5 ms) before the call: the interpreter only switches between bytecodes."""
    import random

    rng = random.Random(5)
    pairs = [(rng.getrandbits(64).to_bytes(8, "big"), b"v" * 64) for _ in range(300000)]
    stop = threading.Event()
    running = threading.Event()
    stamps = []

    def tick():
        running.set()
        count = 0
        while not stop.is_set():
            count += 1
            if count % 64 == 0:
                stamps.append(time.perf_counter())

    thread = threading.Thread(target=tick)
    thread.start()
    running.wait()
    t = db.table("t", create=True)
    start = time.perf_counter()
    t.load(pairs)
    end = time.perf_counter()
    stop.set()
    thread.join()
    middle = start + (end - start) / 2
    assert end - start > 0.02, "the load was too quick to tell"
    assert any(middle < stamp < end for stamp in stamps), "no other thread ran during the load"

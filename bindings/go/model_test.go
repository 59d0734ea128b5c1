package artdb

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
)

// modelSeed is ARTDB_GO_SEED when set (to replay a failure), else a fresh one; it is printed
// by every failure.
func modelSeed(t *testing.T) int64 {
	if s := os.Getenv("ARTDB_GO_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("ARTDB_GO_SEED=%q is not an integer", s)
		}
		return seed
	}
	return rand.Int63()
}

func sortedKeys(model map[string]string) []string {
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// randomKey draws from a small alphabet so that prefixes, neighbours and repeats are common.
func randomKey(rng *rand.Rand) []byte {
	key := make([]byte, rng.Intn(5))
	for i := range key {
		key[i] = "abc\x00\xff"[rng.Intn(5)]
	}
	return key
}

// inRange is the model of Range.
func inRange(key string, r Range) bool {
	if r.Lower != nil {
		c := bytes.Compare([]byte(key), r.Lower)
		if c < 0 || (c == 0 && r.ExcludeLower) {
			return false
		}
	}
	if r.Upper != nil {
		c := bytes.Compare([]byte(key), r.Upper)
		if c > 0 || (c == 0 && !r.IncludeUpper) {
			return false
		}
	}
	return true
}

// Random puts and deletes through Update and Batch, checked against a map after each step by
// forward and backward range scans, seeks, prefix scans and GetMany.
func TestModelCursorsAndGetMany(t *testing.T) {
	seed := modelSeed(t)
	rng := rand.New(rand.NewSource(seed))
	db, path := openTemp(t)
	model := map[string]string{}
	for step := 0; step < 120; step++ {
		writes := func(put func(k, v []byte) error, del func(k []byte) error) error {
			for i := 0; i < 1+rng.Intn(4); i++ {
				key := randomKey(rng)
				if rng.Intn(3) == 0 {
					if err := del(key); err != nil {
						return err
					}
					delete(model, string(key))
					continue
				}
				value := []byte(fmt.Sprint(step, i))
				if err := put(key, value); err != nil {
					return err
				}
				model[string(key)] = string(value)
			}
			return nil
		}
		var err error
		if step%2 == 0 {
			err = db.Update(func(tx *Tx) error {
				return writes(func(k, v []byte) error { return tx.Put("t", k, v) },
					func(k []byte) error { return tx.Delete("t", k) })
			})
		} else {
			err = db.Batch(func(b *Batch) error {
				return writes(func(k, v []byte) error { return b.Put("t", k, v) },
					func(k []byte) error { return b.Delete("t", k) })
			})
		}
		if err != nil {
			t.Fatalf("seed %d step %d: write: %v", seed, step, err)
		}
		if step == 60 {
			if err := db.Close(); err != nil {
				t.Fatalf("seed %d: close: %v", seed, err)
			}
			if db, err = Open(path, &Options{NoSync: true}); err != nil {
				t.Fatalf("seed %d: reopen: %v", seed, err)
			}
		}
		if err := db.View(func(tx *ReadTx) error { return checkModel(tx, model, rng) }); err != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
	}
	if err := db.Verify(); err != nil {
		t.Fatalf("seed %d: verify: %v", seed, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func checkModel(tx *ReadTx, model map[string]string, rng *rand.Rand) error {
	keys := sortedKeys(model)
	r := Range{ExcludeLower: rng.Intn(2) == 0, IncludeUpper: rng.Intn(2) == 0}
	if rng.Intn(4) != 0 {
		r.Lower = randomKey(rng)
	}
	if rng.Intn(4) != 0 {
		r.Upper = randomKey(rng)
	}
	var want []string
	for _, k := range keys {
		if inRange(k, r) {
			want = append(want, k+"="+model[k])
		}
	}
	cursor, err := tx.RangeCursor("t", r)
	if err != nil {
		return err
	}
	defer cursor.Close()
	var forward, backward []string
	for ok := cursor.First(); ok; ok = cursor.Next() {
		forward = append(forward, string(cursor.Key())+"="+string(cursor.Value()))
	}
	for ok := cursor.Last(); ok; ok = cursor.Prev() {
		backward = append([]string{string(cursor.Key()) + "=" + string(cursor.Value())}, backward...)
	}
	if cursor.Err() != nil || fmt.Sprint(forward) != fmt.Sprint(want) || fmt.Sprint(backward) != fmt.Sprint(want) {
		return fmt.Errorf("range %+v: forward %q backward %q, want %q (%v)", r, forward, backward, want, cursor.Err())
	}
	target := randomKey(rng)
	wantSeek, wantFound := "", false
	for _, k := range keys {
		if k >= string(target) && inRange(k, r) {
			wantSeek, wantFound = k, true
			break
		}
	}
	if ok := cursor.Seek(target); ok != wantFound || (ok && string(cursor.Key()) != wantSeek) {
		return fmt.Errorf("seek %q in %+v: %v %q, want %v %q", target, r, ok, cursor.Key(), wantFound, wantSeek)
	}
	prefix := []byte{"abc"[rng.Intn(3)]}
	if rng.Intn(3) == 0 {
		prefix = nil
	}
	var scanned, wantPrefix []string
	err = tx.Scan("t", prefix, func(k, v []byte) bool {
		scanned = append(scanned, string(k))
		return true
	})
	for _, k := range keys {
		if bytes.HasPrefix([]byte(k), prefix) {
			wantPrefix = append(wantPrefix, k)
		}
	}
	if err != nil || fmt.Sprint(scanned) != fmt.Sprint(wantPrefix) {
		return fmt.Errorf("prefix %q: %q, want %q (%v)", prefix, scanned, wantPrefix, err)
	}
	probe := [][]byte{randomKey(rng), randomKey(rng), randomKey(rng)}
	got, err := tx.GetMany("t", probe)
	if err != nil {
		return err
	}
	for i, key := range probe {
		want, present := model[string(key)]
		if (got[i] != nil) != present || string(got[i]) != want {
			return fmt.Errorf("get_many %q: %q, want %q (present %v)", key, got[i], want, present)
		}
	}
	n, err := tx.Len("t")
	if err != nil || n != uint64(len(model)) {
		return fmt.Errorf("len %d, want %d (%v)", n, len(model), err)
	}
	return nil
}

func TestSeekPastEndAndEmptyBounds(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	err := db.Update(func(tx *Tx) error {
		for _, k := range []string{"", "a", "b"} {
			if err := tx.Put("t", []byte(k), []byte("v"+k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *ReadTx) error {
		c, err := tx.Cursor("t")
		if err != nil {
			return err
		}
		defer c.Close()
		if c.Seek([]byte("c")) || c.Err() != nil || c.Valid() {
			return fmt.Errorf("seek past the end: %v %q %v", c.Valid(), c.Key(), c.Err())
		}
		if !c.Seek([]byte("a")) || string(c.Value()) != "va" {
			return fmt.Errorf("seek a: %q", c.Value())
		}
		// An empty, excluded upper bound holds nothing; an empty, excluded lower bound
		// skips only the empty key.
		var got []string
		err = tx.ScanRange("t", Range{Upper: []byte{}}, func(k, v []byte) bool {
			got = append(got, string(k))
			return true
		})
		if err != nil || len(got) != 0 {
			return fmt.Errorf("empty upper bound: %q %v", got, err)
		}
		err = tx.ScanRange("t", Range{Lower: []byte{}, ExcludeLower: true}, func(k, v []byte) bool {
			got = append(got, string(k))
			return true
		})
		if err != nil || fmt.Sprint(got) != "[a b]" {
			return fmt.Errorf("empty lower bound excluded: %q %v", got, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTablesDropAndTableInTransaction(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	if err := db.Update(func(tx *Tx) error { return tx.CreateTable("u") }); err != nil {
		t.Fatal(err)
	}
	if err := db.Batch(func(b *Batch) error { return b.CreateTable("v") }); err != nil {
		t.Fatal(err)
	}
	names, err := db.Tables()
	if err != nil || fmt.Sprint(names) != "[t u v]" {
		t.Fatalf("tables %v, %v", names, err)
	}
	if err := db.DropTable("u"); err != nil {
		t.Fatal(err)
	}
	if err := db.DropTable("u"); !errors.Is(err, ErrNoTable) {
		t.Fatalf("second drop: %v", err)
	}
	if names, _ := db.Tables(); fmt.Sprint(names) != "[t v]" {
		t.Fatalf("after drop: %v", names)
	}
}

func TestBatchRollsBackOnError(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	stop := errors.New("stop")
	var kept *Batch
	err := db.Batch(func(b *Batch) error {
		kept = b
		if err := b.Put("t", []byte("k"), []byte("v")); err != nil {
			return err
		}
		if got, err := b.Get("t", []byte("k")); err != nil || string(got) != "v" {
			return fmt.Errorf("batch sees its write: %q %v", got, err)
		}
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("batch error: %v", err)
	}
	if got, err := db.Get("t", []byte("k")); err != nil || got != nil {
		t.Fatalf("rolled back write visible: %q %v", got, err)
	}
	if err := kept.Put("t", []byte("k"), nil); !errors.Is(err, ErrDone) {
		t.Fatalf("batch used after its end: %v", err)
	}
}

func TestBulkLoad(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	pairs := func(keys ...string) func() ([]byte, []byte, error) {
		i := 0
		return func() ([]byte, []byte, error) {
			if i == len(keys) {
				return nil, nil, io.EOF
			}
			i++
			return []byte(keys[i-1]), []byte("v" + keys[i-1]), nil
		}
	}
	n, err := db.BulkLoad("loaded", true, pairs("a", "b", "c"))
	if err != nil || n != 3 {
		t.Fatalf("bulk load: %d %v", n, err)
	}
	if got, err := db.Get("loaded", []byte("b")); err != nil || string(got) != "vb" {
		t.Fatalf("loaded b: %q %v", got, err)
	}
	if _, err := db.BulkLoad("bad", true, pairs("b", "a")); !errors.Is(err, ErrUnsorted) {
		t.Fatalf("unsorted: %v", err)
	}
	failing := errors.New("source failed")
	_, err = db.BulkLoad("bad", true, func() ([]byte, []byte, error) { return nil, nil, failing })
	if !errors.Is(err, failing) {
		t.Fatalf("source error: %v", err)
	}
	if names, _ := db.Tables(); fmt.Sprint(names) != "[loaded t]" {
		t.Fatalf("a failed load left a table: %v", names)
	}
}

func TestMaintenanceAndClosedHandle(t *testing.T) {
	db, path := openTemp(t)
	if err := db.Update(func(tx *Tx) error { return tx.Put("t", []byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{"sync": db.Sync, "checkpoint": db.Checkpoint,
		"compact": db.Compact, "verify": db.Verify} {
		if err := op(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	stats, err := db.Stats()
	if err != nil || stats.Tables != 1 || stats.Keys != 1 {
		t.Fatalf("stats %+v, %v", stats, err)
	}
	backup := filepath.Join(filepath.Dir(path), "backup.artdb")
	if err := db.Backup(backup); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	if _, err := db.Get("t", []byte("k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
	copyDB, err := Open(backup, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer copyDB.Close()
	if got, err := copyDB.Get("t", []byte("k")); err != nil || string(got) != "v" {
		t.Fatalf("backup k: %q %v", got, err)
	}
	err = copyDB.Update(func(tx *Tx) error { return tx.Put("t", []byte("k"), nil) })
	if !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write to a read-only open: %v", err)
	}
	if _, err := Open(filepath.Join(filepath.Dir(path), "absent"), &Options{ReadOnly: true}); !errors.Is(err, ErrCantOpen) {
		t.Fatalf("read-only open of a missing file: %v", err)
	}
}

func BenchmarkCgoNoop(b *testing.B) {
	for i := 0; i < b.N; i++ {
		noopCall()
	}
}

func benchDB(b *testing.B) *DB {
	db, err := Open(filepath.Join(b.TempDir(), "bench.artdb"), &Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	if err := db.CreateTable("t"); err != nil {
		b.Fatal(err)
	}
	err = db.Batch(func(batch *Batch) error {
		for i := 0; i < 10000; i++ {
			if err := batch.Put("t", []byte(fmt.Sprintf("user%08d", i)), make([]byte, 100)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

func BenchmarkDBGet(b *testing.B) {
	db := benchDB(b)
	defer db.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Get("t", []byte(fmt.Sprintf("user%08d", i%10000))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkViewGet(b *testing.B) {
	db := benchDB(b)
	defer db.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := db.View(func(tx *ReadTx) error {
			_, err := tx.Get("t", []byte(fmt.Sprintf("user%08d", i%10000)))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetMany reports the time per key of 64-key lookups.
func BenchmarkGetMany(b *testing.B) {
	db := benchDB(b)
	defer db.Close()
	keys := make([][]byte, 64)
	b.ResetTimer()
	for i := 0; i < b.N; i += len(keys) {
		for j := range keys {
			keys[j] = []byte(fmt.Sprintf("user%08d", (i+j)%10000))
		}
		err := db.View(func(tx *ReadTx) error {
			_, err := tx.GetMany("t", keys)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// Batches and transactions from several goroutines at once: batches wait for each other's
// writer lock, commits wait for batches, and every write lands.
func TestConcurrentBatchesAndUpdates(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	const workers, rounds = 4, 10
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func(w int) {
			var err error
			for i := 0; i < rounds && err == nil; i++ {
				key := []byte(fmt.Sprintf("w%d-%d", w, i))
				if w%2 == 0 {
					err = db.Batch(func(b *Batch) error { return b.Put("t", key, key) })
				} else {
					err = db.Update(func(tx *Tx) error { return tx.Put("t", key, key) })
				}
			}
			errs <- err
		}(w)
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	err := db.View(func(tx *ReadTx) error {
		n, err := tx.Len("t")
		if err != nil || n != workers*rounds {
			return fmt.Errorf("%d keys, want %d (%v)", n, workers*rounds, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkDBGetParallel is DB.Get from every GOMAXPROCS goroutine at once.
func BenchmarkDBGetParallel(b *testing.B) {
	db := benchDB(b)
	defer db.Close()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			if _, err := db.Get("t", []byte(fmt.Sprintf("user%08d", i%10000))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Cursors inside a write transaction, checked against a map: the transaction's own puts and
// deletes show, also those made between two moves of an open cursor, and a cursor kept past
// its transaction's end fails instead of reading freed memory.
func TestModelTxCursors(t *testing.T) {
	seed := modelSeed(t)
	rng := rand.New(rand.NewSource(seed))
	db, _ := openTemp(t)
	defer db.Close()
	model := map[string]string{}
	var kept *Cursor
	for round := 0; round < 30; round++ {
		err := db.Update(func(tx *Tx) error {
			local := map[string]string{}
			for k, v := range model {
				local[k] = v
			}
			for step := 0; step < 20; step++ {
				key := randomKey(rng)
				if rng.Intn(3) == 0 {
					if err := tx.Delete("t", key); err != nil {
						return err
					}
					delete(local, string(key))
				} else {
					value := fmt.Sprintf("%d.%d", round, step)
					if err := tx.Put("t", key, []byte(value)); err != nil {
						return err
					}
					local[string(key)] = value
				}
			}
			r := Range{Lower: randomKey(rng), Upper: randomKey(rng), ExcludeLower: rng.Intn(2) == 0, IncludeUpper: rng.Intn(2) == 0}
			if rng.Intn(4) == 0 {
				r.Upper = nil
			}
			c, err := tx.RangeCursor("t", r)
			if err != nil {
				return err
			}
			defer c.Close()
			// Walk forward, changing keys just ahead of the cursor between moves.
			var got, want []string
			for ok := c.First(); ok; ok = c.Next() {
				if string(c.Value()) != local[string(c.Key())] {
					return fmt.Errorf("seed %d round %d: %q = %q, model %q", seed, round, c.Key(), c.Value(), local[string(c.Key())])
				}
				got = append(got, string(c.Key()))
				if rng.Intn(3) == 0 {
					ahead := append(append([]byte{}, c.Key()...), "abc\x00"[rng.Intn(4)])
					if rng.Intn(2) == 0 {
						if err := tx.Delete("t", ahead); err != nil {
							return err
						}
						delete(local, string(ahead))
					} else {
						if err := tx.Put("t", ahead, []byte("ahead")); err != nil {
							return err
						}
						local[string(ahead)] = "ahead"
					}
				}
			}
			if c.Err() != nil {
				return c.Err()
			}
			// What a walk must have seen: every key in range now, since the changes were all
			// ahead of the cursor (or behind it, already seen).
			for _, k := range sortedKeys(local) {
				if inRange(k, r) {
					want = append(want, k)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("seed %d round %d range %+v:\n got %q\nwant %q", seed, round, r, got, want)
			}
			// Backward over a prefix.
			prefix := randomKey(rng)
			p, err := tx.PrefixCursor("t", prefix)
			if err != nil {
				return err
			}
			defer p.Close()
			got, want = nil, nil
			for ok := p.Last(); ok; ok = p.Prev() {
				got = append(got, string(p.Key()))
			}
			keys := sortedKeys(local)
			for i := len(keys) - 1; i >= 0; i-- {
				if bytes.HasPrefix([]byte(keys[i]), prefix) {
					want = append(want, keys[i])
				}
			}
			if p.Err() != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("seed %d round %d prefix %q: got %q want %q (%v)", seed, round, prefix, got, want, p.Err())
			}
			if round == 0 {
				kept, err = tx.Cursor("t")
				if err != nil {
					return err
				}
			}
			model = local
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if kept.First() || !errors.Is(kept.Err(), ErrInvalid) {
		t.Fatalf("a cursor kept past its transaction: %v %v", kept.Valid(), kept.Err())
	}
	kept.Close()
}

// Scans carry pairs across the cgo boundary in batches: many batches, values larger than a
// batch's buffer, a limit, an early stop, and slices kept past the scan must all read right.
func TestScanBatches(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	want := map[string][]byte{}
	err := db.Update(func(tx *Tx) error {
		for i := 0; i < 500; i++ {
			key := []byte(fmt.Sprintf("k%04d", i))
			value := bytes.Repeat([]byte{byte(i)}, 1+i%7*i)
			if i%97 == 0 {
				value = bytes.Repeat([]byte{byte(i)}, 100_000) // past a batch's buffer
			}
			want[string(key)] = value
			if err := tx.Put("t", key, value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	err = db.View(func(tx *ReadTx) error {
		var kept [][]byte
		var got []string
		err := tx.ScanRange("t", Range{}, func(k, v []byte) bool {
			if !bytes.Equal(v, want[string(k)]) {
				t.Errorf("%s: %d bytes, want %d", k, len(v), len(want[string(k)]))
			}
			got = append(got, string(k))
			kept = append(kept, v)
			return true
		})
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(keys) {
			return fmt.Errorf("full scan: %d keys, want %d", len(got), len(keys))
		}
		for i, v := range kept {
			if !bytes.Equal(v, want[keys[i]]) {
				return fmt.Errorf("a kept value changed: %s", keys[i])
			}
		}
		scans := map[string]func(string, Range, int, func(k, v []byte) bool) error{
			"ScanRangeN": tx.ScanRangeN, "ScanRangeNBorrowed": tx.ScanRangeNBorrowed,
		}
		for name, scan := range scans {
			for _, limit := range []int{0, 1, 63, 64, 65, 130, 499, 500, 501} {
				n := 0
				err := scan("t", Range{Lower: []byte("k0100")}, limit, func(k, v []byte) bool {
					if string(k) != keys[100+n] || !bytes.Equal(v, want[string(k)]) {
						t.Errorf("%s, limit %d: pair %d is %s", name, limit, n, k)
					}
					n++
					return true
				})
				if err != nil {
					return err
				}
				expect := limit
				if expect > 400 {
					expect = 400
				}
				if n != expect {
					return fmt.Errorf("%s, limit %d gave %d pairs, want %d", name, limit, n, expect)
				}
			}
		}
		// Borrowed slices are reused: the next batch overwrites them, so what fn kept of a
		// borrowed scan is no longer the pair it was (the reason to copy), while copies stay.
		var borrowed, copied [][]byte
		err = tx.ScanRangeNBorrowed("t", Range{}, -1, func(k, v []byte) bool {
			borrowed = append(borrowed, k)
			copied = append(copied, append([]byte(nil), k...))
			return true
		})
		if err != nil {
			return err
		}
		overwritten := 0
		for i := range copied {
			if string(copied[i]) != keys[i] {
				return fmt.Errorf("borrowed scan: key %d copied as %q, want %q", i, copied[i], keys[i])
			}
			if !bytes.Equal(borrowed[i], copied[i]) {
				overwritten++
			}
		}
		if len(copied) != len(keys) || overwritten == 0 {
			return fmt.Errorf("borrowed scan: %d keys, %d overwritten by later batches", len(copied), overwritten)
		}
		n := 0
		err = tx.Scan("t", []byte("k01"), func(k, v []byte) bool {
			n++
			return n < 70 // stop early, inside the second batch
		})
		if err != nil || n != 70 {
			return fmt.Errorf("early stop after %d pairs: %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"sort"
	"strconv"
	"testing"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

var storeNames = []string{"artdb", "bbolt", "badger", "pebble"}

func testSeed(t *testing.T) int64 {
	if s := os.Getenv("ARTDB_GO_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("ARTDB_GO_SEED=%q is not an integer", s)
		}
		return seed
	}
	return rand.Int63()
}

func openStore(t *testing.T, name, dir string) ycsb.DB {
	t.Helper()
	p := properties.NewProperties()
	p.Set(name+".dir", dir)
	p.Set("fieldcount", "3")
	db, err := ycsb.GetDBCreator(name).Create(p)
	if err != nil {
		t.Fatalf("%s: create: %v", name, err)
	}
	return db
}

func randomRecord(rng *rand.Rand, fields int) map[string][]byte {
	record := map[string][]byte{}
	for i := 0; i < 3; i++ {
		if fields == 3 || rng.Intn(2) == 0 {
			record[fmt.Sprintf("field%d", i)] = []byte(fmt.Sprint(rng.Int63()))
		}
	}
	return record
}

// Every store, through go-ycsb's DB interface, against a map of records: inserts, batch
// inserts, reads of all and of some fields, partial updates, scans, batch reads and deletes,
// with a close and reopen midway.
func TestStoresAgainstModel(t *testing.T) {
	for _, name := range storeNames {
		t.Run(name, func(t *testing.T) {
			seed := testSeed(t)
			rng := rand.New(rand.NewSource(seed))
			dir := t.TempDir()
			db := openStore(t, name, dir)
			ctx := context.Background()
			model := map[string]map[string][]byte{}
			key := func() string { return fmt.Sprintf("user%03d", rng.Intn(40)) }
			for step := 0; step < 120; step++ {
				if step == 60 {
					if err := db.Close(); err != nil {
						t.Fatalf("seed %d: close: %v", seed, err)
					}
					db = openStore(t, name, dir)
				}
				if err := modelStep(ctx, db, rng, model, key); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func modelStep(ctx context.Context, db ycsb.DB, rng *rand.Rand, model map[string]map[string][]byte, key func() string) error {
	const table = "usertable"
	batch := db.(ycsb.BatchDB)
	switch k := key(); rng.Intn(7) {
	case 0:
		record := randomRecord(rng, 3)
		model[k] = record
		return db.Insert(ctx, table, k, record)
	case 1:
		keys := []string{k, key()}
		records := []map[string][]byte{randomRecord(rng, 3), randomRecord(rng, 3)}
		for i := range keys {
			model[keys[i]] = records[i]
		}
		return batch.BatchInsert(ctx, table, keys, records)
	case 2:
		fields := []string{"field1"}
		if rng.Intn(2) == 0 {
			fields = nil
		}
		got, err := db.Read(ctx, table, k, fields)
		want, present := model[k]
		if !present {
			if err == nil {
				return fmt.Errorf("read of absent %s: %v", k, got)
			}
			return nil
		}
		if fields != nil {
			want = map[string][]byte{"field1": want["field1"]}
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			return fmt.Errorf("read %s %v: %q, %v; want %q", k, fields, got, err, want)
		}
	case 3:
		update := randomRecord(rng, 1)
		err := db.Update(ctx, table, k, update)
		if _, present := model[k]; !present {
			if err == nil {
				return fmt.Errorf("update of absent %s succeeded", k)
			}
			return nil
		}
		for f, v := range update {
			model[k][f] = v
		}
		return err
	case 4:
		count := 1 + rng.Intn(10)
		got, err := db.Scan(ctx, table, k, count, nil)
		var keys []string
		for mk := range model {
			if mk >= k {
				keys = append(keys, mk)
			}
		}
		sort.Strings(keys)
		if len(keys) > count {
			keys = keys[:count]
		}
		want := make([]map[string][]byte, 0, len(keys))
		for _, mk := range keys {
			want = append(want, model[mk])
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			return fmt.Errorf("scan %s %d: %q, %v; want %q", k, count, got, err, want)
		}
	case 5:
		keys := []string{k, key()}
		got, err := batch.BatchRead(ctx, table, keys, nil)
		_, first := model[keys[0]]
		_, second := model[keys[1]]
		if !first || !second {
			if err == nil {
				return fmt.Errorf("batch read of an absent record %v succeeded", keys)
			}
			return nil
		}
		want := []map[string][]byte{model[keys[0]], model[keys[1]]}
		if err != nil || !reflect.DeepEqual(got, want) {
			return fmt.Errorf("batch read %v: %q, %v; want %q", keys, got, err, want)
		}
	default:
		delete(model, k)
		return db.Delete(ctx, table, k)
	}
	return nil
}

// The command end to end on a small load and run of workload A, for every store.
func TestLoadAndRun(t *testing.T) {
	for _, name := range storeNames {
		dir := t.TempDir()
		common := []string{"-p", "recordcount=50", "-p", "operationcount=50", "-p", name + ".dir=" + dir,
			"-p", "requestdistribution=zipfian", "-p", "readproportion=0.5", "-p", "updateproportion=0.5"}
		if err := run(append([]string{"load", name, "-p", "batch.size=10"}, common...)); err != nil {
			t.Fatalf("%s: load: %v", name, err)
		}
		if err := run(append([]string{"run", name}, common...)); err != nil {
			t.Fatalf("%s: run: %v", name, err)
		}
	}
	if err := run([]string{"run", "nosuchstore"}); err == nil {
		t.Fatal("an unknown database was accepted")
	}
}

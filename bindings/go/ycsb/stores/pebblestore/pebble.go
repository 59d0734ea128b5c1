// Package pebblestore is go-ycsb's "pebble" database: github.com/cockroachdb/pebble, a table
// being a key prefix ("usertable/"). Registered with go-ycsb on import.
//
// Durability: every write is committed with pebble.Sync (its write-ahead log synced before
// the commit returns), pebble's durable setting. Pebble has no transactions, so an update's
// read-modify-write holds a lock striped by key: two updates of one key never interleave.
// Properties: pebble.dir (default /tmp/pebble-ycsb), pebble.nosync, dropdata.
package pebblestore

import (
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"sync"

	"artdb.dev/artdb/ycsb/kv"
	"github.com/cockroachdb/pebble"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// lockStripes is the number of update locks keys are spread over.
const lockStripes = 256

type store struct {
	db    *pebble.DB
	write *pebble.WriteOptions
	seed  maphash.Seed
	locks [lockStripes]sync.Mutex
}

type creator struct{}

// Create opens (or creates) the database directory.
func (creator) Create(p *properties.Properties) (ycsb.DB, error) {
	dir := p.GetString("pebble.dir", "/tmp/pebble-ycsb")
	if p.GetBool(prop.DropData, prop.DropDataDefault) {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		return nil, err
	}
	write := pebble.Sync
	if p.GetBool("pebble.nosync", false) {
		write = pebble.NoSync
	}
	return kv.New(&store{db: db, write: write, seed: maphash.MakeSeed()}, p), nil
}

// quietLogger drops pebble's informational messages (which would interleave with go-ycsb's
// report) and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Errorf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(1)
}

func prefixed(table string, key []byte) []byte {
	out := make([]byte, 0, len(table)+1+len(key))
	return append(append(append(out, table...), '/'), key...)
}

// prefixEnd is the smallest key after every key that starts with table's prefix.
func prefixEnd(table string) []byte {
	return append([]byte(table), '/'+1)
}

func (s *store) Get(table string, key []byte, found func([]byte) error) error {
	value, closer, err := s.db.Get(prefixed(table, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return kv.ErrNotFound
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	return found(value)
}

func (s *store) Scan(table string, start []byte, count int, visit func([]byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefixed(table, start), UpperBound: prefixEnd(table)})
	if err != nil {
		return err
	}
	n := 0
	for ok := it.First(); ok && n < count; ok = it.Next() {
		value, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if err := visit(value); err != nil {
			it.Close()
			return err
		}
		n++
	}
	return it.Close()
}

func (s *store) Update(table string, key []byte, modify func([]byte) ([]byte, error)) error {
	full := prefixed(table, key)
	lock := &s.locks[maphash.Bytes(s.seed, full)%lockStripes]
	lock.Lock()
	defer lock.Unlock()
	var value []byte
	err := s.Get(table, key, func(old []byte) error {
		var err error
		value, err = modify(old)
		return err
	})
	if err != nil {
		return err
	}
	return s.db.Set(full, value, s.write)
}

func (s *store) Put(table string, keys, values [][]byte) error {
	batch := s.db.NewBatch()
	defer batch.Close()
	for i, key := range keys {
		if err := batch.Set(prefixed(table, key), values[i], nil); err != nil {
			return err
		}
	}
	return batch.Commit(s.write)
}

func (s *store) Delete(table string, key []byte) error {
	return s.db.Delete(prefixed(table, key), s.write)
}

func (s *store) Close() error { return s.db.Close() }

func init() { ycsb.RegisterDBCreator("pebble", creator{}) }

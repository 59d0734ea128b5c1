// Package artdbstore is go-ycsb's "artdb" database: artdb through its Go package (cgo over
// the C API). Registered with go-ycsb on import.
//
// Durability: every commit is durable (artdb's default, ARTDB_DURABILITY_SYNC: the commit
// returns once its log record is on stable storage; concurrent commits share a sync).
// Properties: artdb.dir (the directory of the database file, default /tmp/artdb-ycsb),
// artdb.nosync (true: commits return once written, not synced), dropdata.
//
// The cgo boundary: a read is one crossing (artdb.DB.Get begins, reads and ends a snapshot in
// C), BatchRead uses GetMany, and a scan carries its pairs across in batches into one reused
// buffer (ScanRangeNBorrowed: go-ycsb's decode copies each row, as it does bbolt's, whose values
// are valid only within their transaction).
package artdbstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	artdb "artdb.dev/artdb"
	"artdb.dev/artdb/ycsb/kv"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

type store struct {
	db *artdb.DB
}

type creator struct{}

// Create opens (or creates) the database and its table.
func (creator) Create(p *properties.Properties) (ycsb.DB, error) {
	dir := p.GetString("artdb.dir", "/tmp/artdb-ycsb")
	if p.GetBool(prop.DropData, prop.DropDataDefault) {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	db, err := artdb.Open(filepath.Join(dir, "ycsb.artdb"), &artdb.Options{NoSync: p.GetBool("artdb.nosync", false)})
	if err != nil {
		return nil, err
	}
	table := p.GetString(prop.TableName, prop.TableNameDefault)
	if err := db.CreateTable(table); err != nil && !errors.Is(err, artdb.ErrExists) {
		db.Close()
		return nil, fmt.Errorf("create table %s: %w", table, err)
	}
	return kv.New(&store{db: db}, p), nil
}

// readBuffers are the buffers point reads copy values into: found decodes (and copies) a
// value before Get returns, so a buffer is reused and a read leaves no garbage behind.
var readBuffers = sync.Pool{New: func() any { buf := make([]byte, 4096); return &buf }}

func (s *store) Get(table string, key []byte, found func([]byte) error) error {
	buf := readBuffers.Get().(*[]byte)
	defer readBuffers.Put(buf)
	value, err := s.db.GetInto(table, key, *buf)
	if err != nil {
		return err
	}
	if value == nil {
		return kv.ErrNotFound
	}
	if cap(value) > cap(*buf) {
		// A value longer than the buffer: keep the longer buffer for the next read.
		*buf = value[:cap(value)]
	}
	return found(value)
}

func (s *store) GetMany(table string, keys [][]byte, found func(int, []byte) error) error {
	return s.db.View(func(tx *artdb.ReadTx) error {
		values, err := tx.GetMany(table, keys)
		if err != nil {
			return err
		}
		for i, value := range values {
			if value != nil {
				if err := found(i, value); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (s *store) Scan(table string, start []byte, count int, visit func([]byte) error) error {
	return s.db.View(func(tx *artdb.ReadTx) error {
		var failed error
		err := tx.ScanRangeNBorrowed(table, artdb.Range{Lower: start}, count, func(_, value []byte) bool {
			failed = visit(value)
			return failed == nil
		})
		if err != nil {
			return err
		}
		return failed
	})
}

func (s *store) Update(table string, key []byte, modify func([]byte) ([]byte, error)) error {
	return s.db.Update(func(tx *artdb.Tx) error {
		old, err := tx.Get(table, key)
		if err != nil {
			return err
		}
		if old == nil {
			return kv.ErrNotFound
		}
		value, err := modify(old)
		if err != nil {
			return err
		}
		return tx.Put(table, key, value)
	})
}

func (s *store) Put(table string, keys, values [][]byte) error {
	return s.db.Update(func(tx *artdb.Tx) error {
		for i, key := range keys {
			if err := tx.Put(table, key, values[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *store) Delete(table string, key []byte) error {
	return s.db.Update(func(tx *artdb.Tx) error { return tx.Delete(table, key) })
}

func (s *store) Close() error { return s.db.Close() }

func init() { ycsb.RegisterDBCreator("artdb", creator{}) }

// Package bboltstore is go-ycsb's "bbolt" database: go.etcd.io/bbolt, a table per bucket.
// Registered with go-ycsb on import.
//
// Durability: bbolt's default options, under which every Update fsyncs the file before it
// returns. Properties: bbolt.dir (default /tmp/bbolt-ycsb), bbolt.nosync, dropdata.
package bboltstore

import (
	"os"
	"path/filepath"
	"time"

	"artdb.dev/artdb/ycsb/kv"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
	bolt "go.etcd.io/bbolt"
)

type store struct {
	db *bolt.DB
}

type creator struct{}

// Create opens (or creates) the file and the table's bucket.
func (creator) Create(p *properties.Properties) (ycsb.DB, error) {
	dir := p.GetString("bbolt.dir", "/tmp/bbolt-ycsb")
	if p.GetBool(prop.DropData, prop.DropDataDefault) {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	options := *bolt.DefaultOptions
	options.Timeout = 5 * time.Second
	options.NoSync = p.GetBool("bbolt.nosync", false)
	db, err := bolt.Open(filepath.Join(dir, "ycsb.bbolt"), 0o600, &options)
	if err != nil {
		return nil, err
	}
	table := p.GetString(prop.TableName, prop.TableNameDefault)
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte(table))
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return kv.New(&store{db: db}, p), nil
}

func bucket(tx *bolt.Tx, table string) (*bolt.Bucket, error) {
	b := tx.Bucket([]byte(table))
	if b == nil {
		return nil, bolt.ErrBucketNotFound
	}
	return b, nil
}

func (s *store) Get(table string, key []byte, found func([]byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		b, err := bucket(tx, table)
		if err != nil {
			return err
		}
		value := b.Get(key)
		if value == nil {
			return kv.ErrNotFound
		}
		return found(value)
	})
}

func (s *store) Scan(table string, start []byte, count int, visit func([]byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		b, err := bucket(tx, table)
		if err != nil {
			return err
		}
		c := b.Cursor()
		n := 0
		for k, v := c.Seek(start); k != nil && n < count; k, v = c.Next() {
			if err := visit(v); err != nil {
				return err
			}
			n++
		}
		return nil
	})
}

func (s *store) Update(table string, key []byte, modify func([]byte) ([]byte, error)) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := bucket(tx, table)
		if err != nil {
			return err
		}
		old := b.Get(key)
		if old == nil {
			return kv.ErrNotFound
		}
		value, err := modify(old)
		if err != nil {
			return err
		}
		return b.Put(key, value)
	})
}

func (s *store) Put(table string, keys, values [][]byte) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := bucket(tx, table)
		if err != nil {
			return err
		}
		for i, key := range keys {
			if err := b.Put(key, values[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *store) Delete(table string, key []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := bucket(tx, table)
		if err != nil {
			return err
		}
		return b.Delete(key)
	})
}

func (s *store) Close() error { return s.db.Close() }

func init() { ycsb.RegisterDBCreator("bbolt", creator{}) }

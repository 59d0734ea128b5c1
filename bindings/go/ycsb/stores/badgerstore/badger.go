// Package badgerstore is go-ycsb's "badger" database: github.com/dgraph-io/badger/v4, a table
// being a key prefix ("usertable/"). Registered with go-ycsb on import.
//
// Durability: badger's default options with SyncWrites on (badger's own durable setting: a
// commit returns once its value-log write is synced; badger's default leaves it off).
// Properties: badger.dir (default /tmp/badger-ycsb), badger.syncwrites (default true),
// dropdata.
package badgerstore

import (
	"errors"
	"os"

	"artdb.dev/artdb/ycsb/kv"
	badger "github.com/dgraph-io/badger/v4"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// updateAttemptsMax bounds how often an update whose commit conflicts is run again.
const updateAttemptsMax = 16

type store struct {
	db *badger.DB
}

type creator struct{}

// Create opens (or creates) the database directory.
func (creator) Create(p *properties.Properties) (ycsb.DB, error) {
	dir := p.GetString("badger.dir", "/tmp/badger-ycsb")
	if p.GetBool(prop.DropData, prop.DropDataDefault) {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	options := badger.DefaultOptions(dir).
		WithSyncWrites(p.GetBool("badger.syncwrites", true)).
		WithLogger(nil)
	db, err := badger.Open(options)
	if err != nil {
		return nil, err
	}
	return kv.New(&store{db: db}, p), nil
}

func prefixed(table string, key []byte) []byte {
	out := make([]byte, 0, len(table)+1+len(key))
	return append(append(append(out, table...), '/'), key...)
}

func (s *store) Get(table string, key []byte, found func([]byte) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(prefixed(table, key))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return kv.ErrNotFound
		}
		if err != nil {
			return err
		}
		return item.Value(found)
	})
}

func (s *store) Scan(table string, start []byte, count int, visit func([]byte) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		prefix := prefixed(table, nil)
		options := badger.DefaultIteratorOptions
		options.Prefix = prefix
		options.PrefetchSize = count
		it := txn.NewIterator(options)
		defer it.Close()
		n := 0
		for it.Seek(prefixed(table, start)); it.ValidForPrefix(prefix) && n < count; it.Next() {
			if err := it.Item().Value(visit); err != nil {
				return err
			}
			n++
		}
		return nil
	})
}

// update runs fn in a transaction, again on a conflict.
func (s *store) update(fn func(txn *badger.Txn) error) error {
	var err error
	for attempt := 0; attempt < updateAttemptsMax; attempt++ {
		err = s.db.Update(fn)
		if !errors.Is(err, badger.ErrConflict) {
			return err
		}
	}
	return err
}

func (s *store) Update(table string, key []byte, modify func([]byte) ([]byte, error)) error {
	full := prefixed(table, key)
	return s.update(func(txn *badger.Txn) error {
		item, err := txn.Get(full)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return kv.ErrNotFound
		}
		if err != nil {
			return err
		}
		old, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		value, err := modify(old)
		if err != nil {
			return err
		}
		return txn.Set(full, value)
	})
}

// Put writes the pairs in one transaction, or in several when badger finds one too big.
func (s *store) Put(table string, keys, values [][]byte) error {
	txn := s.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	for i, key := range keys {
		full := prefixed(table, key)
		err := txn.Set(full, values[i])
		if errors.Is(err, badger.ErrTxnTooBig) {
			if err := txn.Commit(); err != nil {
				return err
			}
			txn = s.db.NewTransaction(true)
			err = txn.Set(full, values[i])
		}
		if err != nil {
			return err
		}
	}
	return txn.Commit()
}

func (s *store) Delete(table string, key []byte) error {
	return s.update(func(txn *badger.Txn) error { return txn.Delete(prefixed(table, key)) })
}

func (s *store) Close() error { return s.db.Close() }

func init() { ycsb.RegisterDBCreator("badger", creator{}) }

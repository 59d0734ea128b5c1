// Package kv adapts an ordered key-value store to go-ycsb's ycsb.DB and ycsb.BatchDB, so that
// every store the benchmark compares runs the same record logic: a record is one key whose
// value is go-ycsb's row encoding of its fields (util.RowCodec), a read decodes the fields
// asked for, an update is a read-modify-write of the record in one transaction, a scan seeks
// to the start key and decodes up to count records in key order.
//
// A store supplies only the primitives (Store); each commit it makes must be durable as its
// own default durable setting, which its package states.
package kv

import (
	"context"
	"errors"
	"fmt"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/util"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// ErrNotFound is a read or update of a record that does not exist.
var ErrNotFound = errors.New("ycsb: no such record")

// Store is the part of a store the adapter needs. Values passed to callbacks may be borrowed:
// they are valid only during the callback.
type Store interface {
	// Get calls found with key's value in table, or returns ErrNotFound.
	Get(table string, key []byte, found func(value []byte) error) error
	// Scan calls visit with the values of up to count keys >= start in table, in key order.
	Scan(table string, start []byte, count int, visit func(value []byte) error) error
	// Update runs modify on key's current value (ErrNotFound when absent) and stores what it
	// returns, in one transaction committed durably.
	Update(table string, key []byte, modify func(old []byte) ([]byte, error)) error
	// Put sets every keys[i] to values[i] in one transaction committed durably.
	Put(table string, keys, values [][]byte) error
	// Delete removes key in one transaction committed durably.
	Delete(table string, key []byte) error
	// Close closes the store.
	Close() error
}

// ManyGetter is a Store that looks many keys up in one call; BatchRead uses it when present.
type ManyGetter interface {
	// GetMany calls found(i, value) for each keys[i] present in table.
	GetMany(table string, keys [][]byte, found func(i int, value []byte) error) error
}

// DB is a Store as a ycsb.DB.
type DB struct {
	store Store
	codec *util.RowCodec
}

// New wraps store, with the record layout (field names) of p.
func New(store Store, p *properties.Properties) *DB {
	return &DB{store: store, codec: util.NewRowCodec(p)}
}

var _ ycsb.BatchDB = (*DB)(nil)

// Close closes the store.
func (db *DB) Close() error { return db.store.Close() }

// InitThread keeps no per-thread state.
func (db *DB) InitThread(ctx context.Context, _ int, _ int) context.Context { return ctx }

// CleanupThread keeps no per-thread state.
func (db *DB) CleanupThread(context.Context) {}

// decode copies row first: stores may lend it, and the codec's fields point into it.
func (db *DB) decode(row []byte, fields []string) (map[string][]byte, error) {
	return db.codec.Decode(append([]byte(nil), row...), fields)
}

// Read returns the fields asked for (all when fields is empty) of the record at key.
func (db *DB) Read(_ context.Context, table, key string, fields []string) (map[string][]byte, error) {
	var record map[string][]byte
	err := db.store.Get(table, []byte(key), func(row []byte) error {
		var err error
		record, err = db.decode(row, fields)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("read %s/%s: %w", table, key, err)
	}
	return record, err
}

// Scan returns up to count records from startKey on, in key order.
func (db *DB) Scan(_ context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	records := make([]map[string][]byte, 0, count)
	err := db.store.Scan(table, []byte(startKey), count, func(row []byte) error {
		record, err := db.decode(row, fields)
		records = append(records, record)
		return err
	})
	return records, err
}

// Update overwrites the given fields of the record at key, keeping the others.
func (db *DB) Update(_ context.Context, table, key string, values map[string][]byte) error {
	err := db.store.Update(table, []byte(key), func(old []byte) ([]byte, error) {
		record, err := db.decode(old, nil)
		if err != nil {
			return nil, err
		}
		for field, value := range values {
			record[field] = value
		}
		return db.codec.Encode(nil, record)
	})
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("update %s/%s: %w", table, key, err)
	}
	return err
}

// Insert writes the record at key.
func (db *DB) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	return db.BatchInsert(ctx, table, []string{key}, []map[string][]byte{values})
}

// Delete removes the record at key.
func (db *DB) Delete(_ context.Context, table, key string) error {
	return db.store.Delete(table, []byte(key))
}

// BatchInsert writes the records in one transaction.
func (db *DB) BatchInsert(_ context.Context, table string, keys []string, values []map[string][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("batch insert: %d keys but %d records", len(keys), len(values))
	}
	rawKeys := make([][]byte, len(keys))
	rows := make([][]byte, len(keys))
	for i := range keys {
		row, err := db.codec.Encode(nil, values[i])
		if err != nil {
			return err
		}
		rawKeys[i], rows[i] = []byte(keys[i]), row
	}
	return db.store.Put(table, rawKeys, rows)
}

// BatchRead reads the records at keys (in one call when the store is a ManyGetter); an absent
// record is an error, as in Read.
func (db *DB) BatchRead(ctx context.Context, table string, keys []string, fields []string) ([]map[string][]byte, error) {
	records := make([]map[string][]byte, len(keys))
	many, ok := db.store.(ManyGetter)
	if !ok {
		for i, key := range keys {
			record, err := db.Read(ctx, table, key, fields)
			if err != nil {
				return nil, err
			}
			records[i] = record
		}
		return records, nil
	}
	rawKeys := make([][]byte, len(keys))
	for i, key := range keys {
		rawKeys[i] = []byte(key)
	}
	err := many.GetMany(table, rawKeys, func(i int, row []byte) error {
		var err error
		records[i], err = db.decode(row, fields)
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, record := range records {
		if record == nil {
			return nil, fmt.Errorf("batch read %s/%s: %w", table, keys[i], ErrNotFound)
		}
	}
	return records, nil
}

// BatchUpdate updates the records one transaction each.
func (db *DB) BatchUpdate(ctx context.Context, table string, keys []string, values []map[string][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("batch update: %d keys but %d records", len(keys), len(values))
	}
	for i, key := range keys {
		if err := db.Update(ctx, table, key, values[i]); err != nil {
			return err
		}
	}
	return nil
}

// BatchDelete deletes the records one transaction each.
func (db *DB) BatchDelete(ctx context.Context, table string, keys []string) error {
	for _, key := range keys {
		if err := db.Delete(ctx, table, key); err != nil {
			return err
		}
	}
	return nil
}

package artdb

/*
#include "artdb.h"
*/
import "C"

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"time"
)

// updateAttemptsMax bounds how often Update runs a function whose commit conflicts.
const updateAttemptsMax = 16

// A conflicting commit is often still syncing, and a snapshot taken before it is visible
// conflicts with it again: Update waits between attempts, doubling from updateBackoffMin up to
// updateBackoffMax (about a log sync), with jitter so that two writers do not meet again.
const (
	updateBackoffMin = 20 * time.Microsecond
	updateBackoffMax = 5 * time.Millisecond
)

// TxOptions choose a write transaction's isolation and durability.
type TxOptions struct {
	// Serializable validates reads and scanned ranges at commit too (default: snapshot
	// isolation, which validates only writes).
	Serializable bool
	// Durability: DurabilityDefault (the database's), DurabilitySync or DurabilityNoSync.
	Durability Durability
}

// Durability of one commit.
type Durability int

// The durabilities of a commit.
const (
	DurabilityDefault Durability = C.ARTDB_DURABILITY_DEFAULT
	DurabilitySync    Durability = C.ARTDB_DURABILITY_SYNC
	DurabilityNoSync  Durability = C.ARTDB_DURABILITY_NOSYNC
)

// Tx is a write transaction, valid inside Update's function; used by one goroutine at a time.
type Tx struct {
	db  *DB
	txn *C.artdb_txn
}

// Update runs fn in a write transaction (snapshot isolation, the database's durability) and
// commits it; when the commit conflicts with a concurrent one, it runs fn again on a new
// snapshot after a short, growing wait (up to 16 times, then the ErrConflict is returned).
// An error from fn rolls the transaction back and is returned.
func (db *DB) Update(fn func(tx *Tx) error) error {
	return db.UpdateWith(TxOptions{}, fn)
}

// UpdateWith is Update with a chosen isolation and durability.
func (db *DB) UpdateWith(opts TxOptions, fn func(tx *Tx) error) error {
	if _, err := db.handle(); err != nil {
		return err
	}
	var err error
	backoff := updateBackoffMin
	for attempt := 0; attempt < updateAttemptsMax; attempt++ {
		if attempt > 0 {
			time.Sleep(backoff/2 + time.Duration(rand.Int64N(int64(backoff))))
			backoff = min(2*backoff, updateBackoffMax)
		}
		err = db.updateOnce(opts, fn)
		if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrAborted) {
			return err
		}
	}
	return err
}

func (db *DB) updateOnce(opts TxOptions, fn func(tx *Tx) error) error {
	handle, err := db.handle()
	if err != nil {
		return err
	}
	isolation := C.int(C.ARTDB_ISOLATION_SNAPSHOT)
	if opts.Serializable {
		isolation = C.ARTDB_ISOLATION_SERIALIZABLE
	}
	var txn *C.artdb_txn
	err = call(func() C.int {
		return C.artdb_txn_begin(handle, isolation, C.int(opts.Durability), &txn)
	})
	if err != nil {
		return err
	}
	tx := &Tx{db: db, txn: txn}
	defer func() {
		tx.txn = nil
		C.artdb_txn_free(txn)
	}()
	if err := fn(tx); err != nil {
		return err
	}
	return call(func() C.int { return C.artdb_txn_commit(txn) })
}

func (tx *Tx) live() error {
	if tx.txn == nil {
		return ErrDone
	}
	return nil
}

// Get returns a copy of key's value as the transaction sees it (its own writes included), or
// nil when absent.
func (tx *Tx) Get(table string, key []byte) ([]byte, error) {
	if err := tx.live(); err != nil {
		return nil, err
	}
	ctable, release := tx.db.tableName(table)
	defer release()
	k, klen := bytesPtr(key)
	var value C.artdb_val
	var found []byte
	err := call(func() C.int {
		code := C.artdb_txn_get(tx.txn, ctable, k, klen, &value)
		if code == C.ARTDB_OK {
			found = copyVal(value)
		}
		return absentIsOK(code)
	})
	return found, err
}

// Put sets key to value in table.
func (tx *Tx) Put(table string, key, value []byte) error {
	if err := tx.live(); err != nil {
		return err
	}
	ctable, release := tx.db.tableName(table)
	defer release()
	k, klen := bytesPtr(key)
	v, vlen := bytesPtr(value)
	return call(func() C.int { return C.artdb_txn_put(tx.txn, ctable, k, klen, v, vlen) })
}

// Delete removes key from table; deleting an absent key is not an error.
func (tx *Tx) Delete(table string, key []byte) error {
	if err := tx.live(); err != nil {
		return err
	}
	ctable, release := tx.db.tableName(table)
	defer release()
	k, klen := bytesPtr(key)
	return call(func() C.int { return absentIsOK(C.artdb_txn_delete(tx.txn, ctable, k, klen)) })
}

// Cursor opens a cursor over every key of table as the transaction sees it: its own puts and
// deletes included, also those made while the cursor is open (each move finds its place
// afresh, so a step costs about a seek). Close it before the transaction ends; after that its
// moves fail with ErrInvalid. Under serializable isolation the keys it visits are reads.
func (tx *Tx) Cursor(table string) (*Cursor, error) { return tx.RangeCursor(table, Range{}) }

// PrefixCursor opens a cursor, as Cursor, over the keys of table that start with prefix.
func (tx *Tx) PrefixCursor(table string, prefix []byte) (*Cursor, error) {
	r := Range{Lower: append([]byte{}, prefix...)}
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xFF {
			r.Upper = append(append([]byte{}, prefix[:i]...), prefix[i]+1)
			break
		}
	}
	return tx.RangeCursor(table, r)
}

// RangeCursor opens a cursor, as Cursor, over the keys of table within r.
func (tx *Tx) RangeCursor(table string, r Range) (*Cursor, error) {
	if err := tx.live(); err != nil {
		return nil, err
	}
	ctable, release := tx.db.tableName(table)
	defer release()
	lower, lowerLen := boundPtr(r.Lower)
	upper, upperLen := boundPtr(r.Upper)
	var cursor *C.artdb_cursor
	err := call(func() C.int {
		return C.artdb_txn_cursor_open(tx.txn, ctable, lower, lowerLen, upper, upperLen, r.flags(), &cursor)
	})
	if err != nil {
		return nil, err
	}
	return &Cursor{cursor: cursor}, nil
}

// CreateTable creates a table, applied at the transaction's commit.
func (tx *Tx) CreateTable(name string) error { return tx.table(name, true) }

// DropTable drops a table and its keys, applied at the transaction's commit.
func (tx *Tx) DropTable(name string) error { return tx.table(name, false) }

func (tx *Tx) table(name string, create bool) error {
	if err := tx.live(); err != nil {
		return err
	}
	cname, release := tx.db.tableName(name)
	defer release()
	return call(func() C.int { return C.artdb_txn_table(tx.txn, cname, C.bool(create)) })
}

// Batch is a write batch, valid inside DB.Batch's function: the one writer holding the
// database's writer lock, changing the tables in place.
type Batch struct {
	db    *DB
	batch *C.artdb_batch
}

// Batch runs fn in a write batch and commits it: fastest for many changes at once, but other
// commits wait until it ends. An error from fn rolls the batch back and is returned. The
// goroutine stays on one OS thread meanwhile (the C API requires it), so fn must not hand
// the Batch to another goroutine, nor commit another transaction of this DB (that commit
// would wait for the batch to end).
func (db *DB) Batch(fn func(b *Batch) error) error {
	handle, err := db.handle()
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var batch *C.artdb_batch
	if err := check(C.artdb_batch_begin(handle, &batch)); err != nil {
		return err
	}
	b := &Batch{db: db, batch: batch}
	defer func() {
		b.batch = nil
		C.artdb_batch_free(batch)
	}()
	if err := fn(b); err != nil {
		return err
	}
	return check(C.artdb_batch_commit(batch))
}

// The batch's methods run on the thread DB.Batch locked, so they read messages directly.

func (b *Batch) live() error {
	if b.batch == nil {
		return ErrDone
	}
	return nil
}

// Put sets key to value in table.
func (b *Batch) Put(table string, key, value []byte) error {
	if err := b.live(); err != nil {
		return err
	}
	ctable, release := b.db.tableName(table)
	defer release()
	k, klen := bytesPtr(key)
	v, vlen := bytesPtr(value)
	return check(C.artdb_batch_put(b.batch, ctable, k, klen, v, vlen))
}

// Delete removes key from table; deleting an absent key is not an error.
func (b *Batch) Delete(table string, key []byte) error {
	if err := b.live(); err != nil {
		return err
	}
	ctable, release := b.db.tableName(table)
	defer release()
	k, klen := bytesPtr(key)
	return check(absentIsOK(C.artdb_batch_delete(b.batch, ctable, k, klen)))
}

// Get returns a copy of key's value as the batch sees it, or nil when absent.
func (b *Batch) Get(table string, key []byte) ([]byte, error) {
	if err := b.live(); err != nil {
		return nil, err
	}
	ctable, release := b.db.tableName(table)
	defer release()
	k, klen := bytesPtr(key)
	var value C.artdb_val
	code := C.artdb_batch_get(b.batch, ctable, k, klen, &value)
	if code == C.ARTDB_OK {
		return copyVal(value), nil
	}
	return nil, check(absentIsOK(code))
}

// CreateTable creates a table in the batch.
func (b *Batch) CreateTable(name string) error { return b.table(name, true) }

// DropTable drops a table in the batch.
func (b *Batch) DropTable(name string) error { return b.table(name, false) }

func (b *Batch) table(name string, create bool) error {
	if err := b.live(); err != nil {
		return err
	}
	cname, release := b.db.tableName(name)
	defer release()
	return check(C.artdb_batch_table(b.batch, cname, C.bool(create)))
}

// Package artdb is artdb for Go: an embedded transactional ordered key-value store, through
// its C API (crates/artdb-capi, include/artdb.h) by cgo.
//
// The API follows bbolt's: Open, db.View(func(tx *ReadTx) error) for a read snapshot,
// db.Update(func(tx *Tx) error) for a write transaction that is run again when it conflicts
// with a concurrent commit, []byte keys and values in and out (values are copied out of the
// database, so they stay valid after the transaction).
//
// Link: the package links crates/artdb-capi's static library from target/release; build it
// first with `cargo build --release -p artdb-capi` (bindings/go/test.sh does so and runs
// `go test -race`).
package artdb

/*
#cgo CFLAGS: -I${SRCDIR}/../../crates/artdb-capi/include
#cgo LDFLAGS: ${SRCDIR}/../../target/release/libartdb_capi.a -lpthread -ldl -lm
#include <stdlib.h>
#include "artdb.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Error is a failed call: the C API's code and its message (what happened and what to do).
type Error struct {
	Code    int
	Name    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("artdb: %s: %s", e.Name, e.Message) }

// Codes a caller may test for with errors.Is.
var (
	ErrConflict = &Error{Code: int(C.ARTDB_CONFLICT), Name: "ARTDB_CONFLICT"}
	ErrCorrupt  = &Error{Code: int(C.ARTDB_CORRUPT), Name: "ARTDB_CORRUPT"}
	ErrBusy     = &Error{Code: int(C.ARTDB_BUSY), Name: "ARTDB_BUSY"}
	ErrNoTable  = &Error{Code: int(C.ARTDB_NOTABLE), Name: "ARTDB_NOTABLE"}
	ErrExists   = &Error{Code: int(C.ARTDB_EXISTS), Name: "ARTDB_EXISTS"}
	ErrReadOnly = &Error{Code: int(C.ARTDB_READONLY), Name: "ARTDB_READONLY"}
	ErrInvalid  = &Error{Code: int(C.ARTDB_INVALID), Name: "ARTDB_INVALID"}
	ErrTooBig   = &Error{Code: int(C.ARTDB_TOOBIG), Name: "ARTDB_TOOBIG"}
	ErrClosed   = errors.New("artdb: the database is closed")
)

// Is matches errors by code, so errors.Is(err, artdb.ErrConflict) works.
func (e *Error) Is(target error) bool {
	other, ok := target.(*Error)
	return ok && other.Code == e.Code
}

// check turns a code into an error; it must run on the OS thread of the call that returned
// code (the message is the thread's), which callers ensure with runtime.LockOSThread.
func check(code C.int) error {
	if code == C.ARTDB_OK {
		return nil
	}
	return &Error{
		Code:    int(code),
		Name:    C.GoString(C.artdb_strerror(code)),
		Message: C.GoString(C.artdb_errmsg()),
	}
}

// call runs one C call and reads its message on the same OS thread.
func call(body func() C.int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(body())
}

func bytesPtr(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

func copyVal(v C.artdb_val) []byte {
	if v.len == 0 {
		return []byte{}
	}
	return C.GoBytes(unsafe.Pointer(v.data), C.int(v.len))
}

// Options of Open.
type Options struct {
	// NoSync: a commit returns once written, before it is on stable storage.
	NoSync bool
	// ReadOnly opens for reading only.
	ReadOnly bool
}

// DB is an open database; safe for concurrent use.
type DB struct {
	db *C.artdb_db
}

// Open opens the database file at path, creating it when it does not exist. opts may be nil.
func Open(path string, opts *Options) (*DB, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var options C.artdb_options
	C.artdb_options_init(&options)
	if opts != nil {
		if opts.NoSync {
			options.durability = C.ARTDB_DURABILITY_NOSYNC
		}
		options.read_only = C.bool(opts.ReadOnly)
	}
	var db *C.artdb_db
	err := call(func() C.int { return C.artdb_open(cpath, &options, &db) })
	var e *Error
	if errors.As(err, &e) && e.Code == int(C.ARTDB_CANTOPEN) && (opts == nil || !opts.ReadOnly) {
		err = call(func() C.int { return C.artdb_create(cpath, &options, &db) })
		if errors.As(err, &e) && e.Code == int(C.ARTDB_EXISTS) {
			err = call(func() C.int { return C.artdb_open(cpath, &options, &db) })
		}
	}
	if err != nil {
		return nil, err
	}
	return &DB{db: db}, nil
}

// Close checkpoints and closes the database.
func (db *DB) Close() error {
	if db.db == nil {
		return ErrClosed
	}
	handle := db.db
	db.db = nil
	return call(func() C.int { return C.artdb_close(handle) })
}

// CreateTable creates an empty table; ErrExists if it exists.
func (db *DB) CreateTable(name string) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return call(func() C.int { return C.artdb_table_create(db.db, cname) })
}

// Checkpoint writes every commit's changes into the database file.
func (db *DB) Checkpoint() error {
	return call(func() C.int { return C.artdb_checkpoint(db.db) })
}

// ReadTx is a read snapshot, valid inside View's function.
type ReadTx struct {
	read *C.artdb_read
}

// View runs fn on a read snapshot of the last commit.
func (db *DB) View(fn func(tx *ReadTx) error) error {
	if db.db == nil {
		return ErrClosed
	}
	var read *C.artdb_read
	if err := call(func() C.int { return C.artdb_read_begin(db.db, &read) }); err != nil {
		return err
	}
	defer C.artdb_read_end(read)
	return fn(&ReadTx{read: read})
}

// Get returns a copy of key's value in table, or nil when the key is absent.
func (tx *ReadTx) Get(table string, key []byte) ([]byte, error) {
	ctable := C.CString(table)
	defer C.free(unsafe.Pointer(ctable))
	k, klen := bytesPtr(key)
	var value C.artdb_val
	var found []byte
	err := call(func() C.int {
		code := C.artdb_read_get(tx.read, ctable, k, klen, &value)
		if code == C.ARTDB_OK {
			found = copyVal(value)
		}
		if code == C.ARTDB_NOTFOUND {
			return C.ARTDB_OK
		}
		return code
	})
	return found, err
}

// Scan calls fn for each pair of table whose key starts with prefix (all pairs when prefix is
// empty), in key order, until fn returns false. Keys and values are copies.
func (tx *ReadTx) Scan(table string, prefix []byte, fn func(key, value []byte) bool) error {
	ctable := C.CString(table)
	defer C.free(unsafe.Pointer(ctable))
	p, plen := bytesPtr(prefix)
	var cursor *C.artdb_cursor
	if err := call(func() C.int { return C.artdb_cursor_open_prefix(tx.read, ctable, p, plen, &cursor) }); err != nil {
		return err
	}
	defer C.artdb_cursor_free(cursor)
	first := true
	for {
		var key, value C.artdb_val
		var more bool
		err := call(func() C.int {
			var code C.int
			if first {
				code = C.artdb_cursor_first(cursor)
			} else {
				code = C.artdb_cursor_next(cursor)
			}
			if code == C.ARTDB_OK {
				code = C.artdb_cursor_get(cursor, &key, &value)
				more = code == C.ARTDB_OK
			}
			if code == C.ARTDB_NOTFOUND {
				return C.ARTDB_OK
			}
			return code
		})
		if err != nil || !more {
			return err
		}
		if !fn(copyVal(key), copyVal(value)) {
			return nil
		}
		first = false
	}
}

// Tx is a write transaction, valid inside Update's function.
type Tx struct {
	txn *C.artdb_txn
}

// Update runs fn in a write transaction and commits it; when the commit conflicts with a
// concurrent one, it runs fn again on a new snapshot (up to 16 times). An error from fn
// aborts the transaction and is returned.
func (db *DB) Update(fn func(tx *Tx) error) error {
	if db.db == nil {
		return ErrClosed
	}
	var err error
	for attempt := 0; attempt < 16; attempt++ {
		err = db.updateOnce(fn)
		if !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return err
}

func (db *DB) updateOnce(fn func(tx *Tx) error) error {
	var txn *C.artdb_txn
	err := call(func() C.int {
		return C.artdb_txn_begin(db.db, C.ARTDB_ISOLATION_SNAPSHOT, C.ARTDB_DURABILITY_DEFAULT, &txn)
	})
	if err != nil {
		return err
	}
	defer C.artdb_txn_free(txn)
	if err := fn(&Tx{txn: txn}); err != nil {
		return err
	}
	return call(func() C.int { return C.artdb_txn_commit(txn) })
}

// Get returns a copy of key's value as the transaction sees it, or nil when absent.
func (tx *Tx) Get(table string, key []byte) ([]byte, error) {
	ctable := C.CString(table)
	defer C.free(unsafe.Pointer(ctable))
	k, klen := bytesPtr(key)
	var value C.artdb_val
	var found []byte
	err := call(func() C.int {
		code := C.artdb_txn_get(tx.txn, ctable, k, klen, &value)
		if code == C.ARTDB_OK {
			found = copyVal(value)
		}
		if code == C.ARTDB_NOTFOUND {
			return C.ARTDB_OK
		}
		return code
	})
	return found, err
}

// Put sets key to value in table.
func (tx *Tx) Put(table string, key, value []byte) error {
	ctable := C.CString(table)
	defer C.free(unsafe.Pointer(ctable))
	k, klen := bytesPtr(key)
	v, vlen := bytesPtr(value)
	return call(func() C.int { return C.artdb_txn_put(tx.txn, ctable, k, klen, v, vlen) })
}

// Delete removes key from table; deleting an absent key is not an error.
func (tx *Tx) Delete(table string, key []byte) error {
	ctable := C.CString(table)
	defer C.free(unsafe.Pointer(ctable))
	k, klen := bytesPtr(key)
	return call(func() C.int {
		code := C.artdb_txn_delete(tx.txn, ctable, k, klen)
		if code == C.ARTDB_NOTFOUND {
			return C.ARTDB_OK
		}
		return code
	})
}

// Package artdb is artdb for Go: an embedded transactional ordered key-value store, through
// its C API (crates/artdb-capi, include/artdb.h) by cgo.
//
// The API follows bbolt's: Open, db.View(func(tx *ReadTx) error) for a read snapshot,
// db.Update(func(tx *Tx) error) for a write transaction that is run again when it conflicts
// with a concurrent commit, db.Batch(func(b *Batch) error) for many changes under the writer
// lock, []byte keys and values in and out (values are copied out of the database, so they stay
// valid after the transaction).
//
// Threads: a DB and a ReadTx may be used by any number of goroutines; a Tx, a Batch and a
// Cursor by one goroutine at a time. A Batch pins its goroutine to one OS thread for its whole
// life, because the C API requires a batch to stay on the thread that began it.
//
// The cgo boundary: every call into C costs a transition several times a Go function call's
// (BenchmarkCgoNoop measures it), so the package keeps them few: table names are converted to C strings
// once per DB and cached, a cursor step moves and reads its pair in one transition, and
// ReadTx.GetMany looks many keys up in one.
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
	"sync"
	"unsafe"
)

// Error is a failed call: the C API's code and its message (what happened and what to do).
type Error struct {
	Code    int
	Name    string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "artdb: " + e.Name
	}
	return fmt.Sprintf("artdb: %s: %s", e.Name, e.Message)
}

// Is matches errors by code, so errors.Is(err, artdb.ErrConflict) works.
func (e *Error) Is(target error) bool {
	other, ok := target.(*Error)
	return ok && other.Code == e.Code
}

func codeError(code C.int) *Error {
	return &Error{Code: int(code), Name: C.GoString(C.artdb_strerror(code))}
}

// Codes a caller may test for with errors.Is; each is the C API's code of the same name
// (include/artdb.h says what each means). ErrNotFound completes the set: the package's own
// reads report an absent key as a nil value, not as an error.
var (
	ErrNotFound       = codeError(C.ARTDB_NOTFOUND)
	ErrConflict       = codeError(C.ARTDB_CONFLICT)
	ErrCorrupt        = codeError(C.ARTDB_CORRUPT)
	ErrBusy           = codeError(C.ARTDB_BUSY)
	ErrIO             = codeError(C.ARTDB_IO)
	ErrInvalid        = codeError(C.ARTDB_INVALID)
	ErrReadOnly       = codeError(C.ARTDB_READONLY)
	ErrCantOpen       = codeError(C.ARTDB_CANTOPEN)
	ErrNotADB         = codeError(C.ARTDB_NOTADB)
	ErrExists         = codeError(C.ARTDB_EXISTS)
	ErrNoTable        = codeError(C.ARTDB_NOTABLE)
	ErrTooBig         = codeError(C.ARTDB_TOOBIG)
	ErrUnsorted       = codeError(C.ARTDB_UNSORTED)
	ErrNotEmpty       = codeError(C.ARTDB_NOTEMPTY)
	ErrPoisoned       = codeError(C.ARTDB_POISONED)
	ErrAborted        = codeError(C.ARTDB_ABORTED)
	ErrMisuse         = codeError(C.ARTDB_MISUSE)
	ErrLogMissing     = codeError(C.ARTDB_LOGMISSING)
	ErrCallback       = codeError(C.ARTDB_CALLBACK)
	ErrInternal       = codeError(C.ARTDB_INTERNAL)
	ErrSnapshotsAlive = codeError(C.ARTDB_SNAPSHOTS_ALIVE)
	// ErrClosed is a call on a DB after Close (the Go side catches it: no C call is made).
	ErrClosed = errors.New("artdb: the database is closed; open it again")
	// ErrDone is a call on a Tx or Batch after its commit or rollback, or outside the function
	// of Update or Batch that it was given to.
	ErrDone = errors.New("artdb: the transaction has ended; begin a new one")
)

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

// call runs one C call and reads its message on the same OS thread. Locking the thread is
// cheap (no system call); it is needed only on failure, but must be taken before the call.
func call(body func() C.int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(body())
}

// absentIsOK maps NOTFOUND to OK for calls where absence is an answer, not a failure.
func absentIsOK(code C.int) C.int {
	if code == C.ARTDB_NOTFOUND {
		return C.ARTDB_OK
	}
	return code
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

// Options of Open. The zero value is the C API's defaults: durable commits, read-write.
type Options struct {
	// NoSync: a commit returns once written, before it is on stable storage (it survives a
	// killed process, not a power loss, until the next Sync, checkpoint or close).
	NoSync bool
	// ReadOnly opens for reading only; Open then never creates the file.
	ReadOnly bool
	// CheckpointThresholdBytes: a checkpoint runs after a commit that leaves more than this
	// many bytes in the log (0: the default, 16 MiB).
	CheckpointThresholdBytes uint64
	// WalBypassThresholdBytes: a transaction with more changes than this bypasses the log
	// (0: the default, 4 MiB).
	WalBypassThresholdBytes uint64
	// LockWaitMillis: how long Open waits for another handle to close the file before it is
	// ErrBusy (0: the default, 5000; use NoLockWait to fail at once).
	LockWaitMillis uint64
	// NoLockWait makes Open fail at once with ErrBusy when the file is in use.
	NoLockWait bool
}

// tableNamesCachedMax bounds the per-DB cache of C table names; names beyond it are
// converted on each call instead.
const tableNamesCachedMax = 256

// DB is an open database; safe for concurrent use.
type DB struct {
	db *C.artdb_db

	// names caches table names as C strings: a sync.Map, because reads of it from many
	// goroutines then share no written cache line (an RWMutex's reader count would be one).
	names      sync.Map // string -> *C.char
	namesMu    sync.Mutex
	namesCount int
	namesFreed bool
}

// Open opens the database file at path, creating it when it does not exist (unless
// ReadOnly). opts may be nil.
func Open(path string, opts *Options) (*DB, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var options C.artdb_options
	C.artdb_options_init(&options)
	readOnly := false
	if opts != nil {
		if opts.NoSync {
			options.durability = C.ARTDB_DURABILITY_NOSYNC
		}
		readOnly = opts.ReadOnly
		options.read_only = C.bool(opts.ReadOnly)
		options.checkpoint_threshold_bytes = C.uint64_t(opts.CheckpointThresholdBytes)
		options.wal_bypass_threshold_bytes = C.uint64_t(opts.WalBypassThresholdBytes)
		if opts.LockWaitMillis != 0 {
			options.lock_wait_ms = C.uint64_t(opts.LockWaitMillis)
		}
		if opts.NoLockWait {
			options.lock_wait_ms = 0
		}
	}
	var db *C.artdb_db
	err := call(func() C.int { return C.artdb_open(cpath, &options, &db) })
	if errors.Is(err, ErrCantOpen) && !readOnly {
		err = call(func() C.int { return C.artdb_create(cpath, &options, &db) })
		if errors.Is(err, ErrExists) {
			err = call(func() C.int { return C.artdb_open(cpath, &options, &db) })
		}
	}
	if err != nil {
		return nil, err
	}
	return &DB{db: db}, nil
}

// Close checkpoints and closes the database; no other goroutine may use the DB during or
// after the call. ErrSnapshotsAlive: the data is checkpointed and
// the handle freed, but a snapshot or cursor still open keeps the file locked until it ends.
func (db *DB) Close() error {
	if db.db == nil {
		return ErrClosed
	}
	handle := db.db
	err := call(func() C.int { return C.artdb_close(handle) })
	if errors.Is(err, ErrBusy) {
		return err
	}
	db.db = nil
	db.namesMu.Lock()
	db.names.Range(func(key, name any) bool {
		C.free(unsafe.Pointer(name.(*C.char)))
		db.names.Delete(key)
		return true
	})
	db.namesFreed = true
	db.namesMu.Unlock()
	return err
}

// tableName returns name as a C string and a function to release it: cached names live until
// Close, others are freed by the release.
func (db *DB) tableName(name string) (*C.char, func()) {
	if cname, ok := db.names.Load(name); ok {
		return cname.(*C.char), func() {}
	}
	db.namesMu.Lock()
	defer db.namesMu.Unlock()
	if cname, ok := db.names.Load(name); ok {
		return cname.(*C.char), func() {}
	}
	cname := C.CString(name)
	if !db.namesFreed && db.namesCount < tableNamesCachedMax {
		db.names.Store(name, cname)
		db.namesCount++
		return cname, func() {}
	}
	return cname, func() { C.free(unsafe.Pointer(cname)) }
}

func (db *DB) handle() (*C.artdb_db, error) {
	if db.db == nil {
		return nil, ErrClosed
	}
	return db.db, nil
}

// CreateTable creates an empty table in its own commit; ErrExists if it exists.
func (db *DB) CreateTable(name string) error {
	handle, err := db.handle()
	if err != nil {
		return err
	}
	cname, release := db.tableName(name)
	defer release()
	return call(func() C.int { return C.artdb_table_create(handle, cname) })
}

// DropTable drops a table and its keys in its own commit; ErrNoTable if it does not exist.
func (db *DB) DropTable(name string) error {
	handle, err := db.handle()
	if err != nil {
		return err
	}
	cname, release := db.tableName(name)
	defer release()
	return call(func() C.int { return C.artdb_table_drop(handle, cname) })
}

// Tables returns the names of the committed tables in order.
func (db *DB) Tables() ([]string, error) {
	handle, err := db.handle()
	if err != nil {
		return nil, err
	}
	var names *C.artdb_val
	var count C.size_t
	if err := call(func() C.int { return C.artdb_table_names(handle, &names, &count) }); err != nil {
		return nil, err
	}
	defer C.artdb_free(unsafe.Pointer(names))
	out := make([]string, 0, int(count))
	for _, name := range unsafe.Slice(names, int(count)) {
		out = append(out, string(copyVal(name)))
	}
	return out, nil
}

func (db *DB) simple(fn func(handle *C.artdb_db) C.int) error {
	handle, err := db.handle()
	if err != nil {
		return err
	}
	return call(func() C.int { return fn(handle) })
}

// Checkpoint writes every commit's changes into the database file and recycles the log.
func (db *DB) Checkpoint() error {
	return db.simple(func(h *C.artdb_db) C.int { return C.artdb_checkpoint(h) })
}

// Compact rewrites every table densely and shrinks the file.
func (db *DB) Compact() error {
	return db.simple(func(h *C.artdb_db) C.int { return C.artdb_compact(h) })
}

// Sync makes every commit so far durable (one log sync), NoSync ones included.
func (db *DB) Sync() error {
	return db.simple(func(h *C.artdb_db) C.int { return C.artdb_sync(h) })
}

// Backup copies one committed state of every table into a new database file at path,
// verifies it and closes it; writers go on meanwhile.
func (db *DB) Backup(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	return db.simple(func(h *C.artdb_db) C.int { return C.artdb_backup(h, cpath) })
}

// Verify checks every checksum and invariant: nil, or ErrCorrupt naming the first problem.
func (db *DB) Verify() error {
	return db.simple(func(h *C.artdb_db) C.int { return C.artdb_verify(h, nil) })
}

// Stats are figures about a database (include/artdb.h's artdb_stats).
type Stats struct {
	Tables, Keys, FileBytes, PageCount, FreePages uint64
	CheckpointGeneration, LogBytes, LogCommits    uint64
	LogSyncs, CommitSeq, LiveWriters              uint64
}

// Stats returns figures about the database (cheap: reads no node).
func (db *DB) Stats() (Stats, error) {
	var s C.artdb_stats
	err := db.simple(func(h *C.artdb_db) C.int { return C.artdb_get_stats(h, &s) })
	return Stats{
		Tables: uint64(s.tables), Keys: uint64(s.keys), FileBytes: uint64(s.file_bytes),
		PageCount: uint64(s.page_count), FreePages: uint64(s.free_pages),
		CheckpointGeneration: uint64(s.checkpoint_generation), LogBytes: uint64(s.log_bytes),
		LogCommits: uint64(s.log_commits), LogSyncs: uint64(s.log_syncs),
		CommitSeq: uint64(s.commit_seq), LiveWriters: uint64(s.live_writers),
	}, err
}

// Version is the C library's version ("0.1.0").
func Version() string { return C.GoString(C.artdb_version()) }

// noopCall crosses into C and back doing nothing else (artdb_version returns a static
// string): BenchmarkCgoNoop measures the bare cost of the boundary with it.
func noopCall() { C.artdb_version() }

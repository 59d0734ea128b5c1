package artdb

/*
#include <stdlib.h>
#include <string.h>
#include "artdb.h"

// The moves of artdbgo_cursor_step (HERE: stay, for artdbgo_cursor_fill's pending pair).
enum { ARTDBGO_FIRST, ARTDBGO_LAST, ARTDBGO_SEEK, ARTDBGO_NEXT, ARTDBGO_PREV, ARTDBGO_HERE };

// Moves a cursor and reads the pair it lands on, in one crossing of the cgo boundary.
static int artdbgo_cursor_step(artdb_cursor *cursor, int move, const uint8_t *key,
                               size_t key_len, artdb_val *key_out, artdb_val *value_out) {
	int code;
	switch (move) {
	case ARTDBGO_FIRST: code = artdb_cursor_first(cursor); break;
	case ARTDBGO_LAST: code = artdb_cursor_last(cursor); break;
	case ARTDBGO_SEEK: code = artdb_cursor_seek(cursor, key, key_len); break;
	case ARTDBGO_NEXT: code = artdb_cursor_next(cursor); break;
	default: code = artdb_cursor_prev(cursor); break;
	}
	if (code != ARTDB_OK) return code;
	return artdb_cursor_get(cursor, key_out, value_out);
}

// Moves a cursor (by `move` first, then to the next pair) up to `max` times in one crossing of
// the cgo boundary, packing each pair it lands on into buf as [key length, value length (4
// bytes each, native order)][key][value]. Returns ARTDB_NOTFOUND once past the end (after the
// pairs packed), ARTDB_OK when it stopped at `max` or at a pair that does not fit in what is
// left of buf (then *pending is 1, the cursor stands on that pair, and *need is its packed
// size), or the error of a move.
static int artdbgo_cursor_fill(artdb_cursor *cursor, int move, const uint8_t *key,
                               size_t key_len, size_t max, uint8_t *buf, size_t cap,
                               size_t *used, size_t *count, int *pending, size_t *need) {
	*used = 0; *count = 0; *pending = 0; *need = 0;
	for (size_t i = 0; i < max; i++) {
		artdb_val k, v;
		int code;
		if (move == ARTDBGO_HERE) {
			code = artdb_cursor_get(cursor, &k, &v);
		} else {
			code = artdbgo_cursor_step(cursor, move, key, key_len, &k, &v);
		}
		if (code != ARTDB_OK) return code;
		size_t size = 8 + k.len + v.len;
		if (k.len > 0xFFFFFFFFu || v.len > 0xFFFFFFFFu || size > cap - *used) {
			*pending = 1; *need = size;
			return ARTDB_OK;
		}
		uint32_t lens[2] = {(uint32_t)k.len, (uint32_t)v.len};
		memcpy(buf + *used, lens, 8);
		if (k.len) memcpy(buf + *used + 8, k.data, k.len);
		if (v.len) memcpy(buf + *used + 8 + k.len, v.data, v.len);
		*used += size;
		*count += 1;
		move = ARTDBGO_NEXT;
	}
	return ARTDB_OK;
}

// A point read on a snapshot of its own: begin, get, copy out, end, in one crossing. The
// value is copied into buf when it fits in cap bytes, else into malloc'ed memory (freed by the
// caller), because the snapshot ends here; *out says where it is. *found is 0 when the key is
// absent.
static int artdbgo_db_get(const artdb_db *db, const char *table, const uint8_t *key,
                          size_t key_len, uint8_t *buf, size_t cap, artdb_val *out, int *found) {
	artdb_read *read;
	*found = 0; out->data = NULL; out->len = 0;
	int code = artdb_read_begin(db, &read);
	if (code != ARTDB_OK) return code;
	artdb_val value;
	code = artdb_read_get(read, table, key, key_len, &value);
	if (code == ARTDB_OK) {
		uint8_t *into = value.len <= cap ? buf : malloc(value.len);
		if (into == NULL && value.len) {
			code = ARTDB_INTERNAL;
		} else {
			if (value.len) memcpy(into, value.data, value.len);
			*found = 1; out->data = into; out->len = value.len;
		}
	}
	artdb_read_end(read);
	return code;
}
*/
import "C"

import (
	"encoding/binary"
	"runtime"
	"sync"
	"unsafe"
)

// ReadTx is a read snapshot, valid inside View's function; any number of goroutines may read
// it at once.
type ReadTx struct {
	db   *DB
	read *C.artdb_read
}

// View runs fn on a read snapshot of the last commit (it never waits for writers).
func (db *DB) View(fn func(tx *ReadTx) error) error {
	handle, err := db.handle()
	if err != nil {
		return err
	}
	var read *C.artdb_read
	if err := call(func() C.int { return C.artdb_read_begin(handle, &read) }); err != nil {
		return err
	}
	tx := &ReadTx{db: db, read: read}
	defer func() {
		tx.read = nil
		C.artdb_read_end(read)
	}()
	return fn(tx)
}

// Get reads key of table on a snapshot of its own: a copy of the value, or nil when absent.
// One crossing into C instead of View's three, for callers that read one key at a time.
func (db *DB) Get(table string, key []byte) ([]byte, error) {
	return db.getInto(table, key, nil)
}

// GetInto reads key's value in table into buf, on a snapshot of its own, and returns it as
// buf[:n]; a value longer than len(buf) comes back in a new slice of its length (the result
// then is not buf). nil when the key is absent. One crossing into C and no allocation
// when the value fits: for readers that decode a value at once and reuse their buffer (the
// YCSB driver), where Get's copy would be garbage for the collector.
func (db *DB) GetInto(table string, key, buf []byte) ([]byte, error) {
	return db.getInto(table, key, buf)
}

// getInto is Get (buf nil: every value is a new slice) and GetInto.
func (db *DB) getInto(table string, key, buf []byte) ([]byte, error) {
	handle, err := db.handle()
	if err != nil {
		return nil, err
	}
	ctable, release := db.tableName(table)
	defer release()
	k, klen := bytesPtr(key)
	var into *C.uint8_t
	if len(buf) > 0 {
		into = (*C.uint8_t)(unsafe.Pointer(&buf[0]))
	}
	var value C.artdb_val
	var found C.int
	err = call(func() C.int {
		return absentIsOK(C.artdbgo_db_get(handle, ctable, k, klen, into, C.size_t(len(buf)),
			&value, &found))
	})
	if err != nil || found == 0 {
		return nil, err
	}
	n := int(value.len)
	if n == 0 && buf == nil {
		return []byte{}, nil // found and empty: not nil, which means absent
	}
	if n <= len(buf) {
		return buf[:n:n], nil
	}
	// Longer than buf: C copied it into memory of its own.
	defer C.free(unsafe.Pointer(value.data))
	return C.GoBytes(unsafe.Pointer(value.data), C.int(n)), nil
}

func (tx *ReadTx) live() error {
	if tx.read == nil {
		return ErrDone
	}
	return nil
}

// Get returns a copy of key's value in table, or nil when the key is absent.
func (tx *ReadTx) Get(table string, key []byte) ([]byte, error) {
	if err := tx.live(); err != nil {
		return nil, err
	}
	ctable, release := tx.db.tableName(table)
	defer release()
	k, klen := bytesPtr(key)
	var value C.artdb_val
	var found []byte
	err := call(func() C.int {
		code := C.artdb_read_get(tx.read, ctable, k, klen, &value)
		if code == C.ARTDB_OK {
			found = copyVal(value)
		}
		return absentIsOK(code)
	})
	return found, err
}

// GetMany looks keys up in one call into C (which overlaps their cache misses): the result's
// i-th element is a copy of keys[i]'s value, or nil when it is absent.
func (tx *ReadTx) GetMany(table string, keys [][]byte) ([][]byte, error) {
	if err := tx.live(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return [][]byte{}, nil
	}
	ctable, release := tx.db.tableName(table)
	defer release()
	// The keys are packed into one buffer, pinned so that the key array (Go memory the C call
	// reads) may point into it.
	total := 0
	for _, key := range keys {
		total += len(key)
	}
	packed := make([]byte, total+1)
	var pinner runtime.Pinner
	pinner.Pin(&packed[0])
	defer pinner.Unpin()
	in := make([]C.artdb_val, len(keys))
	offset := 0
	for i, key := range keys {
		copy(packed[offset:], key)
		in[i].data = (*C.uint8_t)(unsafe.Pointer(&packed[offset]))
		in[i].len = C.size_t(len(key))
		offset += len(key)
	}
	out := make([]C.artdb_val, len(keys))
	values := make([][]byte, len(keys))
	err := call(func() C.int {
		code := C.artdb_read_get_many(tx.read, ctable, &in[0], C.size_t(len(keys)), &out[0], nil)
		if code == C.ARTDB_OK {
			for i, value := range out {
				if value.data != nil {
					values[i] = copyVal(value)
				}
			}
		}
		return code
	})
	if err != nil {
		return nil, err
	}
	return values, nil
}

// Len returns the number of keys of table in the snapshot.
func (tx *ReadTx) Len(table string) (uint64, error) {
	if err := tx.live(); err != nil {
		return 0, err
	}
	ctable, release := tx.db.tableName(table)
	defer release()
	var n C.uint64_t
	err := call(func() C.int { return C.artdb_read_len(tx.read, ctable, &n) })
	return uint64(n), err
}

// Range bounds a cursor. A nil Lower (or Upper) leaves that end open; by default the lower
// bound is included and the upper excluded.
type Range struct {
	Lower, Upper []byte
	ExcludeLower bool
	IncludeUpper bool
}

// emptyBound gives a non-nil pointer for an empty (but present) bound: the C API reads a null
// pointer with length 0 as an open end.
var emptyBound [1]byte

func boundPtr(b []byte) (*C.uint8_t, C.size_t) {
	if b == nil {
		return nil, 0
	}
	if len(b) == 0 {
		return (*C.uint8_t)(unsafe.Pointer(&emptyBound[0])), 0
	}
	return bytesPtr(b)
}

// Cursor is a position in one table of a snapshot, within bounds. It holds its snapshot, so it
// stays readable after View returns, until Close; used by one goroutine at a time. Moves
// return whether the cursor stands on a pair; Err tells a failure from the end.
type Cursor struct {
	cursor     *C.artdb_cursor
	key, value []byte
	valid      bool
	err        error
}

// Cursor opens a cursor over every key of table, not positioned until a First, Last or Seek.
func (tx *ReadTx) Cursor(table string) (*Cursor, error) {
	return tx.openCursor(table, func(ctable *C.char, out **C.artdb_cursor) C.int {
		return C.artdb_cursor_open(tx.read, ctable, out)
	})
}

// PrefixCursor opens a cursor over the keys of table that start with prefix.
func (tx *ReadTx) PrefixCursor(table string, prefix []byte) (*Cursor, error) {
	p, plen := bytesPtr(prefix)
	return tx.openCursor(table, func(ctable *C.char, out **C.artdb_cursor) C.int {
		return C.artdb_cursor_open_prefix(tx.read, ctable, p, plen, out)
	})
}

// RangeCursor opens a cursor over the keys of table within r.
func (tx *ReadTx) RangeCursor(table string, r Range) (*Cursor, error) {
	lower, lowerLen := boundPtr(r.Lower)
	upper, upperLen := boundPtr(r.Upper)
	flags := r.flags()
	return tx.openCursor(table, func(ctable *C.char, out **C.artdb_cursor) C.int {
		return C.artdb_cursor_open_range(tx.read, ctable, lower, lowerLen, upper, upperLen, flags, out)
	})
}

// flags are the C API's range flags for r.
func (r Range) flags() C.int {
	flags := C.int(0)
	if r.ExcludeLower {
		flags |= C.ARTDB_RANGE_EXCLUDE_LOWER
	}
	if r.IncludeUpper {
		flags |= C.ARTDB_RANGE_INCLUDE_UPPER
	}
	return flags
}

func (tx *ReadTx) openCursor(table string, open func(*C.char, **C.artdb_cursor) C.int) (*Cursor, error) {
	if err := tx.live(); err != nil {
		return nil, err
	}
	ctable, release := tx.db.tableName(table)
	defer release()
	var cursor *C.artdb_cursor
	if err := call(func() C.int { return open(ctable, &cursor) }); err != nil {
		return nil, err
	}
	return &Cursor{cursor: cursor}, nil
}

func (c *Cursor) step(move C.int, key []byte) bool {
	c.valid, c.key, c.value = false, nil, nil
	if c.cursor == nil {
		if c.err == nil {
			c.err = ErrDone
		}
		return false
	}
	k, klen := bytesPtr(key)
	var keyOut, valueOut C.artdb_val
	c.err = call(func() C.int {
		code := C.artdbgo_cursor_step(c.cursor, move, k, klen, &keyOut, &valueOut)
		if code == C.ARTDB_OK {
			c.key, c.value, c.valid = copyVal(keyOut), copyVal(valueOut), true
		}
		return absentIsOK(code)
	})
	return c.valid
}

// First moves to the smallest key in bounds.
func (c *Cursor) First() bool { return c.step(C.ARTDBGO_FIRST, nil) }

// Last moves to the largest key in bounds.
func (c *Cursor) Last() bool { return c.step(C.ARTDBGO_LAST, nil) }

// Seek moves to the first key >= key in bounds.
func (c *Cursor) Seek(key []byte) bool { return c.step(C.ARTDBGO_SEEK, key) }

// Next steps to the next key.
func (c *Cursor) Next() bool { return c.step(C.ARTDBGO_NEXT, nil) }

// Prev steps to the previous key.
func (c *Cursor) Prev() bool { return c.step(C.ARTDBGO_PREV, nil) }

// Valid says whether the cursor stands on a pair.
func (c *Cursor) Valid() bool { return c.valid }

// Key is the current key (a copy the caller may keep), nil when not on a pair.
func (c *Cursor) Key() []byte { return c.key }

// Value is the current value (a copy the caller may keep), nil when not on a pair.
func (c *Cursor) Value() []byte { return c.value }

// Err is the error of the last move, nil when it succeeded or reached the end.
func (c *Cursor) Err() error { return c.err }

// Close frees the cursor and its hold on the snapshot; closing twice is a no-op.
func (c *Cursor) Close() {
	if c.cursor != nil {
		C.artdb_cursor_free(c.cursor)
		c.cursor = nil
	}
	c.valid, c.key, c.value = false, nil, nil
}

// Scan calls fn for each pair of table whose key starts with prefix (all pairs when prefix is
// empty), in key order, until fn returns false. Keys and values are copies.
func (tx *ReadTx) Scan(table string, prefix []byte, fn func(key, value []byte) bool) error {
	cursor, err := tx.PrefixCursor(table, prefix)
	if err != nil {
		return err
	}
	return cursor.each(-1, fn)
}

// ScanRange calls fn for each pair of table within r, in key order, until fn returns false.
func (tx *ReadTx) ScanRange(table string, r Range, fn func(key, value []byte) bool) error {
	return tx.ScanRangeN(table, r, -1, fn)
}

// ScanRangeN is ScanRange for at most limit pairs (all of them when limit is negative). Pairs
// cross the cgo boundary many at a time, so a scan costs about one crossing per batch.
func (tx *ReadTx) ScanRangeN(table string, r Range, limit int, fn func(key, value []byte) bool) error {
	cursor, err := tx.RangeCursor(table, r)
	if err != nil {
		return err
	}
	return cursor.each(limit, fn)
}

// ScanRangeNBorrowed is ScanRangeN without a copy the caller may keep: the key and value fn
// gets are borrowed, valid only until fn returns (copy them to keep them), as bbolt's are valid
// only within their transaction. The scan fills one buffer, reused from batch to batch and
// from scan to scan, so it allocates nothing per pair and leaves no garbage behind; use it
// where fn decodes or copies what it needs anyway.
func (tx *ReadTx) ScanRangeNBorrowed(table string, r Range, limit int, fn func(key, value []byte) bool) error {
	cursor, err := tx.RangeCursor(table, r)
	if err != nil {
		return err
	}
	buf := scanBuffers.Get().(*[]byte)
	defer func() {
		// A buffer grown for one huge pair is not kept: the pool would hold it for every scan.
		if len(*buf) == scanBatchBytes {
			scanBuffers.Put(buf)
		}
	}()
	return cursor.fill(limit, buf, fn)
}

// Pairs and bytes a batch of a scan carries across the cgo boundary at most.
const (
	scanBatchPairs = 64
	scanBatchBytes = 32 << 10
)

// scanBuffers holds the batch buffers of borrowed scans between scans.
var scanBuffers = sync.Pool{New: func() any {
	buf := make([]byte, scanBatchBytes)
	return &buf
}}

// each calls fn with the pairs from the cursor's first on, up to limit (negative: no limit),
// filled in batches; the slices fn gets are its own (each batch has a new buffer).
func (c *Cursor) each(limit int, fn func(key, value []byte) bool) error {
	return c.fill(limit, nil, fn)
}

// fill is each with the batches filled into *reuse when it is not nil (growing it where one
// pair needs more), so the slices fn gets are valid only until it returns; with reuse nil,
// each batch has a new buffer.
func (c *Cursor) fill(limit int, reuse *[]byte, fn func(key, value []byte) bool) error {
	defer c.Close()
	if c.cursor == nil {
		return ErrDone
	}
	move := C.int(C.ARTDBGO_FIRST)
	size := scanBatchBytes
	for limit != 0 {
		batch := scanBatchPairs
		if limit > 0 && limit < batch {
			batch = limit
		}
		var buf []byte
		if reuse == nil {
			buf = make([]byte, size)
		} else {
			if len(*reuse) < size {
				*reuse = make([]byte, size)
			}
			buf = *reuse
		}
		var used, count, need C.size_t
		var pending C.int
		var code C.int
		err := call(func() C.int {
			code = C.artdbgo_cursor_fill(c.cursor, move, nil, 0, C.size_t(batch),
				(*C.uint8_t)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &used, &count, &pending, &need)
			return absentIsOK(code)
		})
		if err != nil {
			return err
		}
		at := 0
		for i := 0; i < int(count); i++ {
			keyLen := int(binary.NativeEndian.Uint32(buf[at:]))
			valueLen := int(binary.NativeEndian.Uint32(buf[at+4:]))
			key := buf[at+8 : at+8+keyLen : at+8+keyLen]
			value := buf[at+8+keyLen : at+8+keyLen+valueLen : at+8+keyLen+valueLen]
			at += 8 + keyLen + valueLen
			if !fn(key, value) {
				return nil
			}
		}
		if limit > 0 {
			limit -= int(count)
		}
		if code == C.ARTDB_NOTFOUND {
			return nil
		}
		move, size = C.ARTDBGO_NEXT, scanBatchBytes
		if pending != 0 {
			move = C.ARTDBGO_HERE
			if int(need) > size {
				size = int(need)
			}
		}
	}
	return nil
}

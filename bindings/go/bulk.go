package artdb

/*
#include <stdlib.h>
#include <string.h>
#include "artdb.h"

extern int artdbGoNextPair(void *context, artdb_val *key, artdb_val *value);

static int artdbgo_bulk_load(const artdb_db *db, const char *table, bool create,
                             uintptr_t source, uint64_t *loaded) {
	return artdb_bulk_load(db, table, create, artdbGoNextPair, (void *)source, loaded);
}
*/
import "C"

import (
	"errors"
	"runtime/cgo"
	"unsafe"
)

// bulkSource is the state of one BulkLoad: the caller's function and the C buffer holding
// the pair the engine borrows until its next call (a copy, so no Go pointer is kept by C).
type bulkSource struct {
	next    func() (key, value []byte, err error)
	err     error
	buf     unsafe.Pointer
	bufSize int
}

// BulkLoad loads pairs from next into the empty table (or, with create, a new table that
// appears with all its pairs or not at all). next returns the pairs in strictly increasing key
// order, then io.EOF; unsorted or repeated keys are ErrUnsorted, and any other error from next
// abandons the load and is returned. Either leaves the table as it was. It returns the number
// of pairs loaded.
func (db *DB) BulkLoad(table string, create bool, next func() (key, value []byte, err error)) (uint64, error) {
	handle, err := db.handle()
	if err != nil {
		return 0, err
	}
	ctable, release := db.tableName(table)
	defer release()
	source := &bulkSource{next: next}
	defer C.free(source.buf)
	h := cgo.NewHandle(source)
	defer h.Delete()
	var loaded C.uint64_t
	err = call(func() C.int {
		return C.artdbgo_bulk_load(handle, ctable, C.bool(create), C.uintptr_t(h), &loaded)
	})
	if source.err != nil && errors.Is(err, ErrCallback) {
		return 0, source.err
	}
	return uint64(loaded), err
}

// pair copies key and value into the source's C buffer, growing it as needed.
func (s *bulkSource) pair(key, value []byte, keyOut, valueOut *C.artdb_val) bool {
	need := len(key) + len(value) + 1
	if need > s.bufSize {
		grown := C.realloc(s.buf, C.size_t(need))
		if grown == nil {
			s.err = errors.New("artdb: out of memory for a bulk load's pair")
			return false
		}
		s.buf, s.bufSize = grown, need
	}
	buf := unsafe.Slice((*byte)(s.buf), s.bufSize)
	copy(buf, key)
	copy(buf[len(key):], value)
	keyOut.data = (*C.uint8_t)(s.buf)
	keyOut.len = C.size_t(len(key))
	valueOut.data = (*C.uint8_t)(unsafe.Add(s.buf, len(key)))
	valueOut.len = C.size_t(len(value))
	return true
}

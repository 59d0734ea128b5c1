package artdb

// This file holds only the exported callback: cgo forbids C definitions in the preamble of a
// file that exports Go functions.

/*
#include "artdb.h"
*/
import "C"

import (
	"io"
	"runtime/cgo"
	"unsafe"
)

//export artdbGoNextPair
func artdbGoNextPair(context unsafe.Pointer, key, value *C.artdb_val) C.int {
	source := cgo.Handle(uintptr(context)).Value().(*bulkSource)
	k, v, err := source.next()
	if err == io.EOF {
		return 0
	}
	if err != nil {
		source.err = err
		return -1
	}
	if !source.pair(k, v, key, value) {
		return -1
	}
	return 1
}

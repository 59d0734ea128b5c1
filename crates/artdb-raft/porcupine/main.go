// Command raft-porcupine checks that a history of client operations on an artdb-raft cluster
// is linearizable, with porcupine's checker and a key-value model (one register per key).
//
// The history is JSON lines, one operation each, written by the cluster test
// (crates/artdb-raft/tests/porcupine.rs):
//
//	{"client":0,"op":"put","key":"k1","value":"v7","found":false,"call":123,"return":456}
//	{"client":1,"op":"get","key":"k1","value":"v7","found":true,"call":130,"return":470}
//
// A get's value/found is what it read; a put's are unused. A put whose answer was lost (it may
// or may not have been applied) has "return": -1 and is checked as one that may take effect at
// any time after its call. Exit status: 0 linearizable, 1 not linearizable (the first
// operations of the shortest failing partition are printed), 2 bad input or a checker timeout.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

type record struct {
	Client int    `json:"client"`
	Op     string `json:"op"`
	Key    string `json:"key"`
	Value  string `json:"value"`
	Found  bool   `json:"found"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
}

type input struct {
	put   bool
	key   string
	value string
}

type output struct {
	value string
	found bool
}

// register is one key's state: its value, or absent.
type register struct {
	value string
	set   bool
}

var model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			key := op.Input.(input).key
			if _, seen := byKey[key]; !seen {
				keys = append(keys, key)
			}
			byKey[key] = append(byKey[key], op)
		}
		partitions := make([][]porcupine.Operation, 0, len(keys))
		for _, key := range keys {
			partitions = append(partitions, byKey[key])
		}
		return partitions
	},
	Init: func() interface{} { return register{} },
	Step: func(state, in, out interface{}) (bool, interface{}) {
		now := state.(register)
		op := in.(input)
		if op.put {
			return true, register{value: op.value, set: true}
		}
		read := out.(output)
		return read.found == now.set && (!read.found || read.value == now.value), now
	},
	DescribeOperation: func(in, out interface{}) string {
		op := in.(input)
		if op.put {
			return fmt.Sprintf("put(%q, %q)", op.key, op.value)
		}
		read := out.(output)
		if !read.found {
			return fmt.Sprintf("get(%q) -> absent", op.key)
		}
		return fmt.Sprintf("get(%q) -> %q", op.key, read.value)
	},
}

func load(path string) ([]porcupine.Operation, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var history []porcupine.Operation
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; scanner.Scan(); line++ {
		var r record
		if err := json.Unmarshal(scanner.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		if r.Op != "put" && r.Op != "get" {
			return nil, fmt.Errorf("%s:%d: op %q is neither put nor get", path, line, r.Op)
		}
		ret := r.Return
		if ret < 0 {
			if r.Op != "put" {
				return nil, fmt.Errorf("%s:%d: a get without an answer belongs out of the history", path, line)
			}
			ret = math.MaxInt64
		} else if ret < r.Call {
			return nil, fmt.Errorf("%s:%d: returns before its call", path, line)
		}
		history = append(history, porcupine.Operation{
			ClientId: r.Client,
			Input:    input{put: r.Op == "put", key: r.Key, value: r.Value},
			Call:     r.Call,
			Output:   output{value: r.Value, found: r.Found},
			Return:   ret,
		})
	}
	return history, scanner.Err()
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: raft-porcupine HISTORY.jsonl")
		os.Exit(2)
	}
	history, err := load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "raft-porcupine:", err)
		os.Exit(2)
	}
	result, info := porcupine.CheckOperationsVerbose(model, history, 60*time.Second)
	switch result {
	case porcupine.Ok:
		fmt.Printf("linearizable: %d operations\n", len(history))
	case porcupine.Illegal:
		fmt.Printf("NOT linearizable: %d operations\n", len(history))
		partial := info.PartialLinearizations()
		for _, partition := range partial {
			if len(partition) > 0 {
				fmt.Printf("  a partition linearizes only %d operations\n", len(partition[0]))
				break
			}
		}
		os.Exit(1)
	default:
		fmt.Printf("the check timed out: %d operations\n", len(history))
		os.Exit(2)
	}
}

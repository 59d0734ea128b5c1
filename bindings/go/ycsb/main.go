// Command artdb-ycsb is go-ycsb's client (its core workload, measurement and worker loop,
// imported as a library) with the databases this repository compares: artdb (through the Go
// package over the C API), bbolt, badger and pebble, each in stores/.
//
//	artdb-ycsb load|run DATABASE [-P workload-file]... [-p name=value]...
//
// As go-ycsb's own command: load inserts recordcount records, run performs operationcount
// operations of the workload, and both print go-ycsb's table of operations (count, OPS and
// latency percentiles per operation and in TOTAL). Unlike it, no debug HTTP listener is
// started, and the thread count defaults to 1 (go-ycsb's is 200): set threadcount.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/client"
	"github.com/pingcap/go-ycsb/pkg/measurement"
	"github.com/pingcap/go-ycsb/pkg/prop"
	_ "github.com/pingcap/go-ycsb/pkg/workload"
	"github.com/pingcap/go-ycsb/pkg/ycsb"

	_ "artdb.dev/artdb/ycsb/stores/artdbstore"
	_ "artdb.dev/artdb/ycsb/stores/badgerstore"
	_ "artdb.dev/artdb/ycsb/stores/bboltstore"
	_ "artdb.dev/artdb/ycsb/stores/pebblestore"
)

// repeated is a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(s string) error { *r = append(*r, s); return nil }

const usage = "usage: artdb-ycsb load|run DATABASE [-P file]... [-p name=value]...\n" +
	"databases: artdb, bbolt, badger, pebble"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "artdb-ycsb:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 || (args[0] != "load" && args[0] != "run") {
		return fmt.Errorf("%s", usage)
	}
	command, dbName := args[0], args[1]
	var files, values repeated
	flags := flag.NewFlagSet("artdb-ycsb", flag.ContinueOnError)
	flags.Var(&files, "P", "a workload property file (may repeat)")
	flags.Var(&values, "p", "a property name=value, over the files' (may repeat)")
	cpuProfile := flags.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := flags.Parse(args[2:]); err != nil {
		return err
	}
	props, err := loadProperties(files, values)
	if err != nil {
		return err
	}
	props.Set(prop.Command, command)
	props.Set(prop.DoTransactions, fmt.Sprint(command == "run"))
	if _, ok := props.Get(prop.ThreadCount); !ok {
		props.Set(prop.ThreadCount, "1")
	}
	measurement.InitMeasure(props)
	workloadName := props.GetString(prop.Workload, "core")
	workloadCreator := ycsb.GetWorkloadCreator(workloadName)
	if workloadCreator == nil {
		return fmt.Errorf("no workload named %q (core is the one go-ycsb ships)", workloadName)
	}
	workload, err := workloadCreator.Create(props)
	if err != nil {
		return fmt.Errorf("workload %s: %w", workloadName, err)
	}
	defer workload.Close()
	dbCreator := ycsb.GetDBCreator(dbName)
	if dbCreator == nil {
		return fmt.Errorf("no database named %q; %s", dbName, usage)
	}
	db, err := dbCreator.Create(props)
	if err != nil {
		return fmt.Errorf("open %s: %w", dbName, err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	client.NewClient(props, workload, client.DbWrapper{DB: db}).Run(ctx)
	fmt.Printf("Run finished, takes %s\n", time.Since(start))
	measurement.Output()
	return db.Close()
}

func loadProperties(files, values []string) (*properties.Properties, error) {
	props := properties.NewProperties()
	if len(files) > 0 {
		loaded, err := properties.LoadFiles(files, properties.UTF8, false)
		if err != nil {
			return nil, err
		}
		props = loaded
	}
	for _, value := range values {
		name, v, ok := strings.Cut(value, "=")
		if !ok {
			return nil, fmt.Errorf("property %q is not name=value", value)
		}
		if _, _, err := props.Set(name, v); err != nil {
			return nil, err
		}
	}
	return props, nil
}

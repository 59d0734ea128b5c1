package artdb

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

func openTemp(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.artdb")
	db, err := Open(path, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTable("t"); err != nil {
		t.Fatal(err)
	}
	return db, path
}

func TestPutGetDeleteReopen(t *testing.T) {
	db, path := openTemp(t)
	err := db.Update(func(tx *Tx) error {
		if err := tx.Put("t", []byte("alice"), []byte("1")); err != nil {
			return err
		}
		if err := tx.Put("t", []byte("bob"), []byte("2")); err != nil {
			return err
		}
		if err := tx.Put("t", []byte{}, []byte("empty key")); err != nil {
			return err
		}
		return tx.Delete("t", []byte("bob"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *ReadTx) error {
		for key, want := range map[string]string{"alice": "1", "": "empty key"} {
			got, err := tx.Get("t", []byte(key))
			if err != nil || string(got) != want {
				return fmt.Errorf("get %q: %q, %v; want %q", key, got, err, want)
			}
		}
		got, err := tx.Get("t", []byte("bob"))
		if err != nil || got != nil {
			return fmt.Errorf("bob after delete: %q, %v", got, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestErrorsCarryCodeAndMessage(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	err := db.CreateTable("t")
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	err = db.View(func(tx *ReadTx) error {
		_, err := tx.Get("missing", []byte("k"))
		return err
	})
	var e *Error
	if !errors.As(err, &e) || e.Code != ErrNoTable.Code || e.Message == "" {
		t.Fatalf("missing table: %v", err)
	}
	long := make([]byte, 5000)
	err = db.Update(func(tx *Tx) error { return tx.Put("t", long, nil) })
	if !errors.Is(err, ErrTooBig) {
		t.Fatalf("long key: %v", err)
	}
}

func TestScanPrefixInOrder(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	err := db.Update(func(tx *Tx) error {
		for _, key := range []string{"b", "ab", "a", "abc", "ac"} {
			if err := tx.Put("t", []byte(key), []byte("v"+key)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	err = db.View(func(tx *ReadTx) error {
		return tx.Scan("t", []byte("ab"), func(key, value []byte) bool {
			seen = append(seen, string(key)+"="+string(value))
			return true
		})
	})
	if err != nil || fmt.Sprint(seen) != "[ab=vab abc=vabc]" {
		t.Fatalf("scan: %v %v", seen, err)
	}
}

// Goroutines increment one counter: commits conflict and Update runs them again, so no
// increment is lost.
func TestConcurrentUpdatesRetryConflicts(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	const workers, increments = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < increments; i++ {
				err := db.Update(func(tx *Tx) error {
					value, err := tx.Get("t", []byte("counter"))
					if err != nil {
						return err
					}
					var n int
					if value != nil {
						fmt.Sscan(string(value), &n)
					}
					return tx.Put("t", []byte("counter"), []byte(fmt.Sprint(n+1)))
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	err := db.View(func(tx *ReadTx) error {
		value, err := tx.Get("t", []byte("counter"))
		if err != nil || string(value) != fmt.Sprint(workers*increments) {
			return fmt.Errorf("counter %q, %v", value, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// GetInto copies into the caller's buffer when the value fits, reads a longer one into a
// buffer of its own, tells an absent key by nil (an empty value is not nil), and refuses a
// closed database and a missing table.
func TestGetIntoFitsOrGrows(t *testing.T) {
	db, _ := openTemp(t)
	long := make([]byte, 10000)
	for i := range long {
		long[i] = byte(i * 7)
	}
	err := db.Update(func(tx *Tx) error {
		if err := tx.Put("t", []byte("short"), []byte("value")); err != nil {
			return err
		}
		if err := tx.Put("t", []byte("empty"), []byte{}); err != nil {
			return err
		}
		return tx.Put("t", []byte("long"), long)
	})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	got, err := db.GetInto("t", []byte("short"), buf)
	if err != nil || string(got) != "value" || &got[0] != &buf[0] {
		t.Fatalf("short: %q, %v (in buf: %v)", got, err, len(got) > 0 && &got[0] == &buf[0])
	}
	got, err = db.GetInto("t", []byte("long"), buf)
	if err != nil || string(got) != string(long) {
		t.Fatalf("long: %d bytes, %v", len(got), err)
	}
	if got, err = db.GetInto("t", []byte("long"), nil); err != nil || len(got) != len(long) {
		t.Fatalf("long into nil: %d bytes, %v", len(got), err)
	}
	if got, err = db.GetInto("t", []byte("empty"), buf); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("empty value: %q (nil %v), %v", got, got == nil, err)
	}
	// Get is the same read with no buffer of the caller's: every value is a new slice.
	if got, err = db.Get("t", []byte("empty")); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Get of an empty value: %q (nil %v), %v", got, got == nil, err)
	}
	if got, err = db.Get("t", []byte("long")); err != nil || string(got) != string(long) {
		t.Fatalf("Get long: %d bytes, %v", len(got), err)
	}
	if got, err = db.GetInto("t", []byte("absent"), buf); err != nil || got != nil {
		t.Fatalf("absent: %q, %v", got, err)
	}
	if _, err = db.GetInto("missing", []byte("k"), buf); !errors.Is(err, ErrNoTable) {
		t.Fatalf("missing table: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err = db.GetInto("t", []byte("short"), buf); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}

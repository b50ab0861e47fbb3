/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package tporigin

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The file layout. Changing the record encoding or the buckets means a new
// SchemaVersion: a program never guesses at a file it did not write.
const (
	// SchemaVersion is the version of the file layout this package reads and
	// writes. A file with another version is refused (see CorruptError).
	SchemaVersion = 1

	fileMagic = "tpkit.dev/tporigin"

	// initialMmapSize is address space, not memory: pages are read in as
	// they are touched. 1M origins take about 140 MB of file.
	initialMmapSize = 256 << 20
)

var (
	bucketMeta    = []byte("meta")
	bucketOrigins = []byte("origins")
	keyMagic      = []byte("magic")
	keySchema     = []byte("schema")
)

// CorruptError reports a database file that cannot be used: bbolt refuses
// it, it was written by another program, or it carries another schema
// version, or a record in it does not decode. The file is left as it is;
// Options.Rebuild moves it aside and starts empty, to be refilled from the
// tenant partitions.
type CorruptError struct {
	// Path is the file.
	Path string
	// Reason says what is wrong with it.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("tporigin: database file %q cannot be used: %s", e.Path, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg + "; open it with Options.Rebuild to move it aside and rebuild it from the tenant partitions"
}

func (e *CorruptError) Unwrap() error { return e.Err }

// record is what the file holds per UID: value = kind, len(partition),
// partition, tenant. The UID is the key.
type record struct {
	kind      Kind
	partition string
	tenant    string
}

func encodeRecord(r record) []byte {
	b := make([]byte, 0, 2+len(r.partition)+len(r.tenant))
	b = append(b, byte(r.kind), byte(len(r.partition)))
	b = append(b, r.partition...)
	return append(b, r.tenant...)
}

// decodeRecord checks a stored value fully: a record that does not decode is
// corruption, never something to skip. partition and tenant alias v.
func decodeRecord(v []byte) (kind Kind, partition, tenant []byte, err error) {
	if len(v) < 2 {
		return 0, nil, nil, fmt.Errorf("record of %d bytes is too short", len(v))
	}
	kind = Kind(v[0])
	if !kind.valid() {
		return 0, nil, nil, fmt.Errorf("unknown kind %d", v[0])
	}
	n := int(v[1])
	if n == 0 || 2+n > len(v) {
		return 0, nil, nil, fmt.Errorf("partition length %d does not fit a record of %d bytes", n, len(v))
	}
	return kind, v[2 : 2+n], v[2+n:], nil
}

// openFile opens (or creates) the bbolt file and checks it is ours. A file
// that is empty or holds no bucket at all is new. Anything else that is not
// ours, or is damaged, is a *CorruptError. bbolt may panic on a damaged page;
// that is caught and reported as corruption too.
func openFile(path string, lockTimeout time.Duration) (db *bolt.DB, err error) {
	// Keep the file bbolt opens. If bbolt panics, the flock must go, so
	// that a rebuild in this process can proceed; the lock belongs to the
	// open file, which bbolt's mapping holds too: once bbolt.Open has
	// returned, closing db unmaps and unlocks; before, only the file can
	// be closed, and checkFile keeps the pages bbolt.Open reads sound.
	var file *os.File
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				closeQuietly(db)
			} else if file != nil {
				_ = file.Close()
			}
			db, err = nil, &CorruptError{Path: path, Reason: fmt.Sprintf("bbolt failed reading it (%v)", r)}
		}
	}()
	openFn := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("tporigin: creating the directory of %q: %w", path, err)
		}
	}
	if err := checkFile(path); err != nil {
		return nil, err
	}
	// A fault reading the mapping (a page the checks above could not see
	// is missing) becomes a panic, recovered above, instead of killing the
	// process; it applies to this goroutine, which is the one bbolt reads on.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	db, err = bolt.Open(path, 0o600, &bolt.Options{
		Timeout:      lockTimeout,
		FreelistType: bolt.FreelistMapType,
		OpenFile:     openFn,
		// Map address space up front: every remap while a batch grows the
		// file makes bbolt copy all the batch's dirty keys and values.
		InitialMmapSize: initialMmapSize,
	})
	if err != nil {
		switch {
		case errors.Is(err, bolt.ErrTimeout):
			return nil, fmt.Errorf("tporigin: database file %q is locked by another process (waited %v): %w", path, lockTimeout, err)
		case errors.Is(err, bolt.ErrInvalid), errors.Is(err, bolt.ErrChecksum), errors.Is(err, bolt.ErrVersionMismatch):
			return nil, &CorruptError{Path: path, Reason: "not a valid bbolt file", Err: err}
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("tporigin: opening database file: %w", err)
		}
		// bbolt reports most damage it detects at open as plain errors.
		return nil, &CorruptError{Path: path, Reason: "bbolt could not open it", Err: err}
	}
	if err := initOrCheck(db, path); err != nil {
		closeQuietly(db)
		return nil, err
	}
	return db, nil
}

// closeQuietly closes a database found to be damaged; bbolt may panic on it
// again, and the error already says what is wrong.
func closeQuietly(db *bolt.DB) {
	defer func() { _ = recover() }()
	_ = db.Close()
}

func initOrCheck(db *bolt.DB, path string) error {
	return db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			empty := true
			_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
			if !empty {
				return &CorruptError{Path: path, Reason: "it is a bbolt file of another program (no tporigin metadata)"}
			}
			// A new file: bbolt initialised it, we write our metadata in
			// the same transaction as the bucket, so a crash leaves either
			// an empty file (new again) or a complete one.
			meta, err := tx.CreateBucket(bucketMeta)
			if err != nil {
				return err
			}
			if err := meta.Put(keyMagic, []byte(fileMagic)); err != nil {
				return err
			}
			if err := meta.Put(keySchema, []byte(strconv.Itoa(SchemaVersion))); err != nil {
				return err
			}
			_, err = tx.CreateBucket(bucketOrigins)
			return err
		}
		if m := meta.Get(keyMagic); !bytes.Equal(m, []byte(fileMagic)) {
			return &CorruptError{Path: path, Reason: fmt.Sprintf("its magic is %q, not %q", truncate(m), fileMagic)}
		}
		v := meta.Get(keySchema)
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return &CorruptError{Path: path, Reason: fmt.Sprintf("its schema version %q is not a number", truncate(v))}
		}
		if n != SchemaVersion {
			return &CorruptError{Path: path, Reason: fmt.Sprintf("it has schema version %d and this program reads version %d", n, SchemaVersion)}
		}
		if tx.Bucket(bucketOrigins) == nil {
			return &CorruptError{Path: path, Reason: "its origins bucket is missing"}
		}
		return nil
	})
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// loadFile calls fn for every record, in key order. A record that does not
// decode stops the load with a *CorruptError naming the key.
func loadFile(db *bolt.DB, path string, sizeHint func(n int), fn func(uid, partition, tenant []byte, kind Kind) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{Path: path, Reason: fmt.Sprintf("bbolt failed reading it (%v)", r)}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see openFile
	return db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOrigins)
		if sizeHint != nil {
			// Stats reads page headers only: cheap next to the load, and
			// it spares the maps their growth.
			sizeHint(b.Stats().KeyN)
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				return &CorruptError{Path: path, Reason: fmt.Sprintf("key %q is a bucket, not a record", truncate(k))}
			}
			kind, p, t, err := decodeRecord(v)
			if err == nil {
				err = fn(k, p, t, kind)
			}
			if err != nil {
				return &CorruptError{Path: path, Reason: fmt.Sprintf("record %q does not decode", truncate(k)), Err: err}
			}
		}
		return nil
	})
}

// writeBatch applies one group of changes in one transaction: one fsync for
// all of them. A nil value deletes. Keys are written in order, which keeps
// bbolt's page splits cheap.
func writeBatch(db *bolt.DB, batch map[string][]byte) error {
	keys := make([]string, 0, len(batch))
	for k := range batch {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOrigins)
		for _, k := range keys {
			var err error
			if v := batch[k]; v == nil {
				err = b.Delete([]byte(k))
			} else {
				err = b.Put([]byte(k), v)
			}
			if err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
		}
		return nil
	})
}

// moveAside renames a bad file out of the way, keeping it for inspection.
func moveAside(path string, now time.Time) (string, error) {
	aside := fmt.Sprintf("%s.corrupt-%s", path, now.UTC().Format("20060102T150405Z"))
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("tporigin: moving corrupt database file %q aside: %w", path, err)
	}
	return aside, nil
}

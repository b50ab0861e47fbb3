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
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Compaction at Open. bbolt reuses the pages a commit frees, so churn keeps
// the file at the size its live origins need (make bench-origin: 36,000 pod
// replacements leave a node's file at 14 pages), but it never gives pages
// back: a file that once held many more origins than it does now (a TP
// removed, stale origins pruned) keeps its peak size. Open rewrites such a
// file: above compactMinSize, when it is more than compactRatio times the
// pages its data occupies.
const (
	compactMinSize = 1 << 20
	compactRatio   = 4
	// compactBatch is the keys per transaction of the copy: about 9 MB of
	// pages, whatever the file's size.
	compactBatch = 1 << 16
	// compactSuffix names the copy being written; a crash may leave one,
	// which the next Open removes. The file itself is never in doubt: the
	// copy replaces it by rename only once it is complete and synced.
	compactSuffix = ".compact"
)

// fileUsage is how much of a bbolt file is in use, in bytes.
type fileUsage struct {
	highWater int64 // the pages the file must hold: in use or free
	live      int64 // the pages the buckets occupy, and the meta and freelist pages
}

func usageOf(db *bolt.DB) (fileUsage, error) {
	var u fileUsage
	pageSize := int64(db.Info().PageSize)
	err := db.View(func(tx *bolt.Tx) error {
		u.highWater = tx.Size()
		u.live = 4 * pageSize // two meta pages, the root bucket, the freelist
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			s := b.Stats()
			u.live += int64(s.BranchPageN+s.LeafPageN+s.BranchOverflowN+s.LeafOverflowN) * pageSize
			return nil
		})
	})
	return u, err
}

// compactIfSparse returns db, or, when its file is far larger than its data,
// the database reopened on a compacted copy (db is then closed). A failed
// copy is logged and leaves db as it was: the file is only larger than it
// needs to be. Only a failure to open the copy once it has replaced the file
// is an error, and db is then closed.
func (t *Tracker) compactIfSparse(db *bolt.DB) (*bolt.DB, error) {
	path := t.opts.Path
	tmp := path + compactSuffix
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		t.log.Warningf("Could not remove %s, left by an interrupted compaction: %v", tmp, err)
	}
	// The size first: it is free, and a node's file is far below the
	// minimum; counting the live pages reads every page header (about
	// 10 ms for 1M origins).
	var size int64
	_ = db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	if size <= compactMinSize {
		return db, nil
	}
	u, err := usageOf(db)
	if err != nil || u.highWater <= compactRatio*u.live {
		return db, nil
	}
	start := time.Now()
	if err := copyOrigins(db, tmp, t.opts.LockTimeout, compactBatch); err != nil {
		_ = os.Remove(tmp)
		t.log.Warningf("Compacting TP-origin database %s (%d bytes for %d of data) failed; going on with it as it is: %v", path, u.highWater, u.live, err)
		return db, nil
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		t.log.Warningf("Compacting TP-origin database %s failed; going on with it as it is: %v", path, err)
		return db, nil
	}
	syncDir(filepath.Dir(path))
	// The new file is locked before the old one is let go. A process that
	// opened the old one and waits for its lock gets a file no longer at
	// path: two owners of one file is a misconfiguration either way.
	ndb, err := openFile(path, t.opts.LockTimeout)
	closeQuietly(db)
	if err != nil {
		return nil, fmt.Errorf("tporigin: reopening %s after compacting it: %w", path, err)
	}
	nu, err := usageOf(ndb)
	if err != nil {
		closeQuietly(ndb)
		return nil, fmt.Errorf("tporigin: reopening %s after compacting it: %w", path, err)
	}
	t.log.Infof("Compacted TP-origin database %s from %d to %d bytes in %v", path, u.highWater, nu.highWater, time.Since(start).Round(time.Millisecond))
	return ndb, nil
}

// copyOrigins writes db's origins to a new file at tmp, batch keys per
// transaction, so that a large file's copy does not sit in memory whole;
// each commit is synced.
func copyOrigins(db *bolt.DB, tmp string, lockTimeout time.Duration, batch int) error {
	out, err := openFile(tmp, lockTimeout) // a new file with our metadata
	if err != nil {
		return err
	}
	err = db.View(func(src *bolt.Tx) error {
		c := src.Bucket(bucketOrigins).Cursor()
		// k and v stay valid while src is open: they outlive each
		// destination transaction, which keeps them until its commit.
		k, v := c.First()
		for k != nil {
			err := out.Update(func(dst *bolt.Tx) error {
				to := dst.Bucket(bucketOrigins)
				// Keys arrive in order: full pages, as a fresh load
				// would leave them. Later inserts split them as usual.
				to.FillPercent = 1
				for n := 0; k != nil && n < batch; n++ {
					if err := to.Put(k, v); err != nil {
						return err
					}
					k, v = c.Next()
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a rename in dir durable. Where directories cannot be synced
// the rename is still atomic; only its durability waits for the filesystem.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

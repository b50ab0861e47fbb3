package tporigin

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestFileBoundedUnderChurn replaces a node's 110 pods one at a time, as a
// kubelet does (Forget the old UID, Observe the new one, Flush), with a
// commit per replacement, and checks that the file stops growing: bbolt
// reuses the pages each commit frees once no reader holds them, so after
// hundreds of commits the file is a few pages more than the live data.
// The control case holds a read transaction open through the churn, so
// bbolt can reuse nothing and every commit extends the file: the check
// must catch that. Unbounded growth is a page or more per commit, so a few
// hundred commits show it; make bench-origin runs an hour's worth (36,000
// replacements) with fsync, where a slower leak would show. Here bbolt's
// NoSync keeps the test fast.
func TestFileBoundedUnderChurn(t *testing.T) {
	const pods, warmup = 110, 100
	for _, tc := range []struct {
		name         string
		replacements int
		holdReader   bool
		wantBounded  bool
	}{
		{name: "kubelet pattern", replacements: 500, wantBounded: true},
		// Fewer: the pinned pages, and the freelist that lists them,
		// grow the file quadratically, and a remap would wait for the
		// reader.
		{name: "control: a reader pins freed pages", replacements: 100, holdReader: true, wantBounded: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "origins.db")
			tr, err := Open(Options{Path: path, Partitions: []string{"tp0", "tp1"}})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			tr.db.NoSync = true // page reuse does not depend on fsync
			ctx := context.Background()
			var live []Observation
			n := 0
			add := func() {
				o := Observation{UID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), Kind: KindPod, Partition: fmt.Sprintf("tp%d", n%2), Tenant: "tenant-a"}
				n++
				if _, err := tr.Record(ctx, o); err != nil {
					t.Fatal(err)
				}
				live = append(live, o)
			}
			replace := func(k int) {
				for i := 0; i < k; i++ {
					if ok, err := tr.Forget(live[0].UID, live[0].Partition); err != nil || !ok {
						t.Fatalf("Forget(%s) = %v, %v", live[0].UID, ok, err)
					}
					live = live[1:]
					add()
				}
			}
			for len(live) < pods {
				add()
			}
			replace(warmup)
			start := measureFileUse(t, tr.db)
			if tc.holdReader {
				rtx, err := tr.db.Begin(false)
				if err != nil {
					t.Fatal(err)
				}
				defer rtx.Rollback()
			}
			replace(tc.replacements)
			end := measureFileUse(t, tr.db)
			t.Logf("after %d replacements: %v; after %d more: %v", warmup, start, tc.replacements, end)
			if got := tr.Len(); got != pods {
				t.Fatalf("the tracker holds %d origins, want %d", got, pods)
			}
			// Unbounded growth adds a page or more per commit: thousands
			// here. Bounded, the file may settle a few pages above where
			// it was after the warm-up.
			bounded := end.highWater <= 2*start.highWater && end.highWater <= 4*end.live
			if bounded != tc.wantBounded {
				t.Errorf("file bounded = %v, want %v: after %d replacements %v, after %d more %v",
					bounded, tc.wantBounded, warmup, start, tc.replacements, end)
			}
		})
	}
}

// fileUse is what a bbolt file holds, in pages.
type fileUse struct {
	highWater int // pages in use or free: what the file must hold
	live      int // pages the buckets hold, and the meta, root and freelist pages
}

func (u fileUse) String() string {
	return fmt.Sprintf("%d pages (%d live)", u.highWater, u.live)
}

func measureFileUse(t *testing.T, db *bolt.DB) fileUse {
	t.Helper()
	var u fileUse
	err := db.View(func(tx *bolt.Tx) error {
		u.highWater = int(tx.Size() / int64(db.Info().PageSize))
		u.live = 4
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			s := b.Stats()
			u.live += s.BranchPageN + s.LeafPageN + s.BranchOverflowN + s.LeafOverflowN
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

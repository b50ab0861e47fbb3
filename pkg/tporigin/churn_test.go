package tporigin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tpkit-dev/tpkit/pkg/corelog"
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
	const pods, warmup = 110, 50
	for _, tc := range []struct {
		name         string
		replacements int
		holdReader   bool
		wantBounded  bool
	}{
		{name: "kubelet pattern", replacements: 300, wantBounded: true},
		// Fewer: the pinned pages, and the freelist that lists them,
		// grow the file quadratically, and a remap would wait for the
		// reader.
		{name: "control: a reader pins freed pages", replacements: 50, holdReader: true, wantBounded: false},
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
				o := Observation{UID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), Kind: KindPod, Partition: fmt.Sprintf("tp%d", n%2), Tenant: fmt.Sprintf("tenant-%d", n%2)}
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
			start := mustUsage(t, tr.db)
			if tc.holdReader {
				rtx, err := tr.db.Begin(false)
				if err != nil {
					t.Fatal(err)
				}
				defer rtx.Rollback()
			}
			replace(tc.replacements)
			end := mustUsage(t, tr.db)
			t.Logf("after %d replacements: %+v; after %d more: %+v", warmup, start, tc.replacements, end)
			if got := tr.Len(); got != pods {
				t.Fatalf("the tracker holds %d origins, want %d", got, pods)
			}
			// Unbounded growth adds a page or more per commit: thousands
			// here. Bounded, the file may settle a few pages above where
			// it was after the warm-up.
			bounded := end.highWater <= 2*start.highWater && end.highWater <= 4*end.live
			if bounded != tc.wantBounded {
				t.Errorf("file bounded = %v, want %v: after %d replacements %+v, after %d more %+v",
					bounded, tc.wantBounded, warmup, start, tc.replacements, end)
			}
		})
	}
}

// TestOpenCompactsAShrunkFile: bbolt never gives pages back, so a file that
// once held 10,000 origins and now holds 110 (writeShrunkFile) keeps its
// size until Open rewrites it; a file the size its data needs is left alone (same inode),
// and a copy left by an interrupted compaction is removed.
func TestOpenCompactsAShrunkFile(t *testing.T) {
	const kept = 110
	opts := writeShrunkFile(t, kept)
	path := opts.Path
	// A leftover of a compaction that a crash interrupted: garbage.
	if err := os.WriteFile(path+compactSuffix, []byte("half a copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, inode := usageOfFile(t, path)
	tr, logs := openLogged(t, opts)
	if got := tr.Len(); got != kept {
		t.Errorf("after compaction the tracker holds %d origins, want %d", got, kept)
	}
	for i := 0; i < kept; i++ {
		if p, ok := tr.OriginOf(shrinkUID(i)); !ok || p != shrinkTP(i) {
			t.Fatalf("after compaction OriginOf(%s) = %q, %v; want %q", shrinkUID(i), p, ok, shrinkTP(i))
		}
	}
	// The reopened file takes writes.
	if _, err := tr.Record(context.Background(), Observation{UID: shrinkUID(kept), Kind: KindPod, Partition: "tp0"}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	after, compactedInode := usageOfFile(t, path)
	t.Logf("before: %+v; after: %+v; log: %q", before, after, *logs)
	if after.highWater > compactMinSize || after.highWater > compactRatio*after.live {
		t.Errorf("Open did not compact the file: %d bytes for %d of data, before %d", after.highWater, after.live, before.highWater)
	}
	if _, err := os.Stat(path + compactSuffix); !os.IsNotExist(err) {
		t.Errorf("the interrupted compaction's copy is still there: %v", err)
	}
	if !strings.Contains(strings.Join(*logs, "\n"), "Compacted TP-origin database") {
		t.Errorf("the compaction was not logged: %q", *logs)
	}

	// Compact already: Open leaves it alone.
	tr, _ = openLogged(t, opts)
	if got := tr.Len(); got != kept+1 {
		t.Errorf("reopened tracker holds %d origins, want %d", got, kept+1)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ino := usageOfFile(t, path); ino != compactedInode {
		t.Errorf("Open rewrote a file that was compact already")
	}
	if inode == compactedInode {
		t.Errorf("the compacted file has the inode of the original")
	}
}

// TestOpenGoesOnWhenCompactionFails: compaction only saves space, so a
// copy that cannot be written (its name is taken by a directory) is logged
// and Open goes on with the file as it is.
func TestOpenGoesOnWhenCompactionFails(t *testing.T) {
	const kept = 110
	opts := writeShrunkFile(t, kept)
	path := opts.Path
	if err := os.MkdirAll(filepath.Join(path+compactSuffix, "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	before, inode := usageOfFile(t, path)
	tr, logs := openLogged(t, opts)
	if got := tr.Len(); got != kept {
		t.Errorf("the tracker holds %d origins, want %d", got, kept)
	}
	if _, err := tr.Record(context.Background(), Observation{UID: shrinkUID(kept), Kind: KindPod, Partition: "tp0"}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	after, ino := usageOfFile(t, path)
	if ino != inode || after.highWater != before.highWater {
		t.Errorf("the file changed although compaction could not run: %+v -> %+v", before, after)
	}
	if !strings.Contains(strings.Join(*logs, "\n"), "Compacting TP-origin database") {
		t.Errorf("the failed compaction was not logged: %q", *logs)
	}
}

// TestCopyOriginsInBatches: the compaction's copy, in transactions of a few
// keys, holds every record unchanged and nothing else.
func TestCopyOriginsInBatches(t *testing.T) {
	dir := t.TempDir()
	db, err := openFile(filepath.Join(dir, "origins.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.NoSync = true
	want := make(map[string][]byte)
	for i := 0; i < 110; i++ {
		want[shrinkUID(i)] = encodeRecord(record{kind: KindPod, partition: shrinkTP(i), tenant: "tenant-" + shrinkTP(i)})
	}
	if err := writeBatch(db, want); err != nil {
		t.Fatal(err)
	}
	for _, batch := range []int{7, 110, 1000} {
		tmp := filepath.Join(dir, fmt.Sprintf("copy-%d.db", batch))
		if err := copyOrigins(db, tmp, time.Second, batch); err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		out, err := openFile(tmp, time.Second)
		if err != nil {
			t.Fatalf("batch %d: the copy does not open: %v", batch, err)
		}
		got := make(map[string][]byte)
		err = out.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketOrigins).ForEach(func(k, v []byte) error {
				got[string(k)] = append([]byte(nil), v...)
				return nil
			})
		})
		out.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("batch %d: the copy holds %d records, want %d", batch, len(got), len(want))
		}
		for k, v := range want {
			if string(got[k]) != string(v) {
				t.Errorf("batch %d: record %s = %q, want %q", batch, k, got[k], v)
			}
		}
	}
}

func shrinkUID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }
func shrinkTP(i int) string  { return fmt.Sprintf("tp%d", i%2) }

// openLogged opens a tracker that keeps its log lines.
func openLogged(t *testing.T, opts Options) (*Tracker, *[]string) {
	t.Helper()
	logs := new([]string)
	keep := func(format string, args ...interface{}) { *logs = append(*logs, fmt.Sprintf(format, args...)) }
	opts.Logger = corelog.Funcs{Debug: keep, Info: keep, Warning: keep, Error: keep}
	tr, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return tr, logs
}

// writeShrunkFile leaves in a temp dir a file that held 10,000 pod origins
// and now holds kept of them (shrinkUID(0..kept-1)), checks that bbolt kept
// its peak size (above compactMinSize and compactRatio times its data), and
// returns the options to open it with. It writes through the store's own
// functions, two commits as a tracker's Flush would make them, without a
// tracker's per-origin work: the race build makes that slow.
func writeShrunkFile(t *testing.T, kept int) Options {
	t.Helper()
	const peak = 10000
	opts := Options{Path: filepath.Join(t.TempDir(), "origins.db"), Partitions: []string{"tp0", "tp1"}}
	db, err := openFile(opts.Path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	db.NoSync = true
	all := make(map[string][]byte, peak)
	gone := make(map[string][]byte, peak-kept)
	for i := 0; i < peak; i++ {
		all[shrinkUID(i)] = encodeRecord(record{kind: KindPod, partition: shrinkTP(i), tenant: "tenant-" + shrinkTP(i)})
		if i >= kept {
			gone[shrinkUID(i)] = nil
		}
	}
	if err := writeBatch(db, all); err != nil {
		t.Fatal(err)
	}
	if err := writeBatch(db, gone); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if u, _ := usageOfFile(t, opts.Path); u.highWater <= compactMinSize || u.highWater <= compactRatio*u.live {
		t.Fatalf("the shrunk file is not sparse enough to test: %+v", u)
	}
	return opts
}

// usageOfFile opens a closed file with bbolt and says how much of it is used,
// and its inode.
func usageOfFile(t *testing.T, path string) (fileUsage, uint64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return mustUsage(t, db), fi.Sys().(*syscall.Stat_t).Ino
}

func mustUsage(t *testing.T, db *bolt.DB) fileUsage {
	t.Helper()
	u, err := usageOf(db)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

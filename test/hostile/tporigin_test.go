//go:build linux

package hostile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

// TestDamagedOriginFiles damages a tporigin file every way a disk, a copy
// or an editor can: cut at every page boundary and in between, and each
// page's header overwritten. A damaged file must never kill the process:
// Open reports a *tporigin.CorruptError (or opens, when the damage is in
// pages the file no longer uses), and with Rebuild it moves the file aside
// and gives a tracker that records and persists again.
func TestDamagedOriginFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	tr, err := tporigin.Open(tporigin.Options{Path: good, Partitions: []string{"tp1", "tp2"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3000; i++ {
		if _, err := tr.Observe(tporigin.Observation{UID: fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), Kind: tporigin.KindPod, Partition: "tp1", Tenant: "acme"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// bbolt grows its file in steps of 16 MB; the damage goes where the
	// data is, in the pages up to the last one written.
	page := os.Getpagesize()
	used := len(bytes.TrimRight(raw, "\x00"))
	used = (used + page - 1) / page * page
	raw = raw[:used]
	damaged := map[string][]byte{}
	for size := 0; size < len(raw); size += page / 2 {
		damaged[fmt.Sprintf("cut to %d bytes", size)] = raw[:size]
	}
	for off := 0; off+16 <= len(raw); off += page {
		b := append([]byte(nil), raw...)
		copy(b[off:], "\xde\xad\xbe\xef\xde\xad\xbe\xef\xff\xff\xff\xff\xff\xff\xff\xff")
		damaged[fmt.Sprintf("page %d's header overwritten", off/page)] = b
	}
	var corrupt, opened int
	for name, b := range damaged {
		path := filepath.Join(dir, "origins.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		tr, err := tporigin.Open(tporigin.Options{Path: path, LockTimeout: 1e9})
		var ce *tporigin.CorruptError
		switch {
		case err == nil:
			opened++
			tr.Close()
		case errors.As(err, &ce):
			corrupt++
		default:
			t.Errorf("%s: Open = %v, want a tracker or a *CorruptError", name, err)
		}
		tr, err = tporigin.Open(tporigin.Options{Path: path, Rebuild: true, LockTimeout: 1e9})
		if err != nil {
			t.Fatalf("%s: Open with Rebuild = %v", name, err)
		}
		if _, err := tr.Record(context.Background(), tporigin.Observation{UID: "after", Kind: tporigin.KindPod, Partition: "tp2"}); err != nil {
			t.Fatalf("%s: recording after the rebuild: %v", name, err)
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		tr, err = tporigin.Open(tporigin.Options{Path: path})
		if err != nil {
			t.Fatalf("%s: the rebuilt file does not reopen: %v", name, err)
		}
		if tp, ok := tr.OriginOf("after"); !ok || tp != "tp2" {
			t.Errorf("%s: the rebuilt file lost an acknowledged origin: %q %v", name, tp, ok)
		}
		tr.Close()
		aside, _ := filepath.Glob(path + ".corrupt-*")
		for _, a := range aside {
			os.Remove(a)
		}
		os.Remove(path)
	}
	t.Logf("%d damaged files: %d refused as corrupt, %d opened (damage in unused pages)", len(damaged), corrupt, opened)
	if corrupt == 0 {
		t.Fatal("no damaged file was found corrupt")
	}
}

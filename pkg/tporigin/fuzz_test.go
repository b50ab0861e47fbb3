package tporigin

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzDecodeRecord: any stored value decodes or is an error, never a panic,
// and what encodeRecord writes decodes back.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte{1, 3, 't', 'p', '1'})
	f.Add([]byte{2, 3, 't', 'p', '1', 't', '1'})
	f.Add([]byte{9, 0})
	f.Add([]byte{1, 255, 'x'})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, v []byte) {
		kind, p, ten, err := decodeRecord(v)
		if err != nil {
			return
		}
		back := encodeRecord(record{kind: kind, partition: string(p), tenant: string(ten)})
		if string(back) != string(v) {
			t.Fatalf("decode(%q) re-encodes as %q", v, back)
		}
	})
}

// FuzzParseUUID: only canonical lowercase UUIDs parse, and they format back
// to themselves; both parsers agree.
func FuzzParseUUID(f *testing.F) {
	f.Add("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
	f.Add("0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")
	f.Add("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		k, ok := parseUUIDString(s)
		k2, ok2 := parseUUID(s)
		if ok != ok2 || ok && k != k2 {
			t.Fatalf("parsers disagree on %q", s)
		}
		if ok && k.String() != s {
			t.Fatalf("parseUUID(%q).String() = %q", s, k.String())
		}
	})
}

// TestOpenRejectsBadOptions: Open validates its options.
func TestOpenRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{StaticTenants: map[string]string{"system": "tp1"}},
		{StaticTenants: map[string]string{"Bad": "tp1"}},
		{StaticTenants: map[string]string{"a": "tp/1"}},
		{Partitions: []string{"tp1", "tp1"}},
		{BatchDelay: -1},
	} {
		if _, err := Open(o); err == nil {
			t.Errorf("Open(%+v) accepted bad options", o)
		}
	}
}

// FuzzOpenFile: whatever bytes are in the origin file, Open returns a
// tracker or an error (a *CorruptError for a file it cannot use), never a
// crash; with Rebuild it always gets a working tracker. The seeds are a
// good file, cut at several sizes, and with flipped bytes in its meta pages.
func FuzzOpenFile(f *testing.F) {
	dir := f.TempDir()
	good := filepath.Join(dir, "good.db")
	writeOrigins(f, good, 200)
	raw, err := os.ReadFile(good)
	if err != nil {
		f.Fatal(err)
	}
	// The pages in use, not bbolt's preallocated tail.
	r := bytes.NewReader(raw)
	m0, ok0 := readBoltMeta(r, 0)
	m1, ok1 := readBoltMeta(r, int64(m0.pageSize))
	if !ok0 || !ok1 {
		f.Fatal("the good file has no valid meta pages")
	}
	if m1.pages > m0.pages {
		m0.pages = m1.pages
	}
	raw = raw[:m0.pages*uint64(m0.pageSize)]
	f.Add(raw)
	for _, n := range []int{100, 4096, 8192, 12288, len(raw) / 2, len(raw) - 1} {
		if n < len(raw) {
			f.Add(raw[:n])
		}
	}
	for _, off := range []int{16, 24, 40, 56, 4096 + 16, 4096 + 56} {
		b := append([]byte(nil), raw...)
		if off < len(b) {
			b[off] ^= 0xff
			f.Add(b)
		}
	}
	f.Add([]byte("not a database"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "origins.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		tr, err := Open(Options{Path: path, LockTimeout: time.Second})
		if err == nil {
			tr.Close()
			return
		}
		var ce *CorruptError
		if !errors.As(err, &ce) {
			t.Fatalf("Open = %v, want a *CorruptError", err)
		}
		tr, err = Open(Options{Path: path, Rebuild: true, LockTimeout: time.Second})
		if err != nil {
			t.Fatalf("Open with Rebuild = %v", err)
		}
		tr.Close()
	})
}

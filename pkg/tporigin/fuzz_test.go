package tporigin

import (
	"flag"
	"strings"
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

func TestFlags(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--tporigin-db=/var/lib/tpkit/origins.db", "--tporigin-rebuild", "--tporigin-static-tenants=a=tp1, b=tp2", "--tporigin-batch-delay=20ms"}); err != nil {
		t.Fatal(err)
	}
	if o.Path != "/var/lib/tpkit/origins.db" || !o.Rebuild || o.BatchDelay != 20*time.Millisecond || o.StaticTenants["a"] != "tp1" || o.StaticTenants["b"] != "tp2" {
		t.Fatalf("parsed %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"a", "a=", "=tp1", "a=tp1,a=tp2"} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		var o Options
		o.AddFlags(fs)
		if err := fs.Parse([]string{"--tporigin-static-tenants=" + bad}); err == nil {
			t.Errorf("--tporigin-static-tenants=%s accepted", bad)
		}
	}
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

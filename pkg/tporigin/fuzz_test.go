package tporigin

import "testing"

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

package names

import (
	"bytes"
	"testing"
)

// FuzzParse feeds arbitrary dotted names to the grammar: it must never panic,
// and every label of a reading must be one of the input's labels.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "svc", "a.b.svc", "a.b.c.svc", "_a._b.c.d.svc", "a.b.c.d.svc", "_p._t.s.n.t.svc",
		"1-2-3-4.ns.pod", "1-2-3-4.ns.t.pod", "dns-version", "ns.dns", "a.b.c.d.e.f.g.svc", "..", "_._.a.b.svc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ls := labels(s)
		r := Parse(ls)
		if r.N > len(r.Readings) {
			t.Fatalf("N %d", r.N)
		}
		if r.N > 0 && r.Kind != Service && r.Kind != Pod {
			t.Fatalf("readings for kind %d", r.Kind)
		}
		for i := 0; i < r.N; i++ {
			rd := r.Readings[i]
			for _, part := range [][]byte{rd.Tenant, rd.Namespace, rd.Service, rd.Endpoint, rd.Port, rd.Protocol} {
				if len(part) == 0 {
					continue
				}
				found := false
				for _, l := range ls {
					if bytes.Contains(l, part) {
						found = true
					}
				}
				if !found {
					t.Fatalf("%q: reading part %q is not from the input", s, part)
				}
			}
			if rd.Legacy && len(rd.Tenant) != 0 {
				t.Fatalf("%q: legacy reading with a tenant", s)
			}
		}
		_, _ = ParseDashedIP([]byte(s))
		_, _ = ParseReverse(ls)
	})
}

// FuzzWire checks Lower and Split on arbitrary bytes.
func FuzzWire(f *testing.F) {
	f.Add([]byte("\x03foo\x03BAR\x00"))
	f.Add([]byte("\x00"))
	f.Add([]byte("\xc0\x0c"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var dst [MaxWire]byte
		n := Lower(dst[:], b)
		if n < 0 {
			return
		}
		if n > len(b) || !bytes.EqualFold(dst[:n], b[:n]) {
			t.Fatalf("Lower(%q) = %q", b, dst[:n])
		}
		var offs [128]uint8
		k := Split(dst[:n], offs[:])
		for i := 0; i < k; i++ {
			_ = Label(dst[:n], offs[:], i)
		}
	})
}

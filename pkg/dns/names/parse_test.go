package names

import (
	"net/netip"
	"strings"
	"testing"
)

func labels(s string) [][]byte {
	if s == "" {
		return nil
	}
	var out [][]byte
	for _, l := range strings.Split(s, ".") {
		out = append(out, []byte(l))
	}
	return out
}

type want struct {
	form                                   Form
	legacy                                 bool
	tenant, ns, svc, endpoint, port, proto string
}

func TestParse(t *testing.T) {
	cases := []struct {
		name     string
		kind     Kind
		readings []want
	}{
		{"", Apex, nil},
		{"svc", Apex, nil},
		{"pod", Apex, nil},
		{"dns-version", DNSVersion, nil},
		{"ns.dns", NameServer, nil},
		{"foo", Invalid, nil},
		{"a.b.foo", Invalid, nil},
		{"kube-system.svc", Service, []want{{form: NamespaceOnly, legacy: true, ns: "kube-system"}, {form: TenantOnly, tenant: "kube-system"}}},
		{"kube-dns.kube-system.svc", Service, []want{
			{form: ServiceName, legacy: true, svc: "kube-dns", ns: "kube-system"},
			{form: NamespaceOnly, ns: "kube-dns", tenant: "kube-system"}}},
		{"foo.bar.baz.svc", Service, []want{
			{form: ServiceName, svc: "foo", ns: "bar", tenant: "baz"},
			{form: EndpointName, legacy: true, endpoint: "foo", svc: "bar", ns: "baz"}}},
		{"ep.foo.bar.baz.svc", Service, []want{
			{form: EndpointName, endpoint: "ep", svc: "foo", ns: "bar", tenant: "baz"},
			{form: ServiceName, legacy: true, port: "ep", proto: "foo", svc: "bar", ns: "baz"}}},
		{"_http._tcp.web.default.svc", Service, []want{{form: ServiceName, legacy: true, port: "http", proto: "tcp", svc: "web", ns: "default"}}},
		{"_http._tcp.web.default.acme.svc", Service, []want{{form: ServiceName, port: "http", proto: "tcp", svc: "web", ns: "default", tenant: "acme"}}},
		{"a._b.c.d.e.f.svc", Invalid, nil},
		{"a.b.c.d.e.f.g", Invalid, nil},
		{"10-0-0-1.default.pod", Pod, []want{
			{form: PodName, legacy: true, svc: "10-0-0-1", ns: "default"},
			{form: NamespaceOnly, ns: "10-0-0-1", tenant: "default"}}},
		{"10-0-0-1.web.acme.pod", Pod, []want{{form: PodName, svc: "10-0-0-1", ns: "web", tenant: "acme"}}},
		{"a.b.c.d.pod", Invalid, nil},
	}
	for _, c := range cases {
		r := Parse(labels(c.name))
		if r.Kind != c.kind || r.N != len(c.readings) {
			t.Errorf("%q: kind %d with %d readings, want %d with %d", c.name, r.Kind, r.N, c.kind, len(c.readings))
			continue
		}
		for i, w := range c.readings {
			g := r.Readings[i]
			got := want{g.Form, g.Legacy, string(g.Tenant), string(g.Namespace), string(g.Service), string(g.Endpoint), string(g.Port), string(g.Protocol)}
			if got != w {
				t.Errorf("%q reading %d: %+v, want %+v", c.name, i, got, w)
			}
		}
	}
}

func TestParseDashedIP(t *testing.T) {
	for in, out := range map[string]string{
		"10-0-0-1": "10.0.0.1", "fd00--1": "fd00::1", "2001-db8--1": "2001:db8::1",
		"10-0-0": "", "10-0-0-256": "", "x": "", "": "", "1-2-3-4-5": "", "fe80--1%eth0": "",
	} {
		a, ok := ParseDashedIP([]byte(in))
		if (out == "") == ok || (ok && a.String() != out) {
			t.Errorf("%q: %v %v, want %q", in, a, ok, out)
		}
	}
}

func TestParseReverse(t *testing.T) {
	for in, out := range map[string]string{
		"1.0.0.10.in-addr.arpa": "10.0.0.1",
		"1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa": "fd00::1",
		"0.0.10.in-addr.arpa": "", "256.0.0.10.in-addr.arpa": "", "01.0.0.10.in-addr.arpa": "",
		"x.0.0.10.in-addr.arpa": "", "1.0.0.10.example": "", "g.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa": "",
	} {
		a, ok := ParseReverse(labels(in))
		if (out == "") == ok || (ok && (a.As16() != netip.MustParseAddr(out).As16() || a.Is4() != netip.MustParseAddr(out).Is4())) {
			t.Errorf("%q: %v %v, want %q", in, a, ok, out)
		}
	}
}

func TestLowerAndSplit(t *testing.T) {
	w := []byte("\x03Foo\x03BAR\x00")
	var dst [MaxWire]byte
	n := Lower(dst[:], w)
	if n != len(w) || string(dst[:n]) != "\x03foo\x03bar\x00" {
		t.Fatalf("Lower: %d %q", n, dst[:n])
	}
	var offs [8]uint8
	if k := Split(dst[:n], offs[:]); k != 2 || string(Label(dst[:n], offs[:], 1)) != "bar" {
		t.Fatalf("Split: %d", k)
	}
	for _, bad := range []string{"", "\x05ab", "\x40" + strings.Repeat("a", 64) + "\x00", "\x01a"} {
		if Lower(dst[:], []byte(bad)) >= 0 {
			t.Errorf("Lower accepted %q", bad)
		}
	}
}

func TestParseAllocatesNothing(t *testing.T) {
	l := labels("_http._tcp.web.default.acme.svc")
	if a := testing.AllocsPerRun(100, func() { Parse(l) }); a != 0 {
		t.Fatalf("Parse allocates %v times", a)
	}
}

func TestFromDotted(t *testing.T) {
	cases := []struct {
		in   string
		want string // dotted form of the result, "" for -1
	}{
		{"ext.interwebs.test", "ext.interwebs.test."},
		{"Ext.Interwebs.TEST.", "ext.interwebs.test."},
		{"svc1.testns.svc.cluster.local.", "svc1.testns.svc.cluster.local."},
		{".", "."},
		{"a..b", ""},
		{"a..", ""},
		{".a", ""},
		{strings.Repeat("x", 64) + ".test", ""},
		{strings.Repeat("abcdefghi.", 25) + "abcd", "" /* 254 bytes of text: 256 on the wire */},
		{strings.Repeat("abcdefghi.", 25) + "abc", strings.Repeat("abcdefghi.", 25) + "abc."},
	}
	for _, c := range cases {
		var dst [MaxWire]byte
		n := FromDotted(dst[:], c.in)
		got := ""
		if n >= 0 {
			if n < 1 || dst[n-1] != 0 || Lower(make([]byte, MaxWire), dst[:n]) != n {
				t.Errorf("FromDotted(%q) wrote a malformed name %v", c.in, dst[:n])
				continue
			}
			got = dotted(dst[:n])
		}
		if got != c.want {
			t.Errorf("FromDotted(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// dotted reads a wire name back into dotted form.
func dotted(w []byte) string {
	var b strings.Builder
	for i := 0; w[i] != 0; i += 1 + int(w[i]) {
		b.Write(w[i+1 : i+1+int(w[i])])
		b.WriteByte('.')
	}
	if b.Len() == 0 {
		return "."
	}
	return b.String()
}

func TestIsAddress(t *testing.T) {
	for s, want := range map[string]bool{
		"10.0.0.1": true, "10.0.0.1.": true, "fd00::1": true,
		"ext.interwebs.test": false, "cafe.de": false, "10.0.0": false, "10.0.0.256": false,
		"010.0.0.1": false, "fe80::1%eth0": false, "": false, ".": false, "1234": false,
	} {
		if got := IsAddress(s); got != want {
			t.Errorf("IsAddress(%q) = %v, want %v", s, got, want)
		}
	}
}

package server

import (
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

func TestParseClientSubnet(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		ok   bool
		host string // the identity it names, "" for none
	}{
		{"IPv4 /32", []byte{0, 1, 32, 0, 10, 0, 0, 7}, true, "10.0.0.7"},
		{"IPv4 /24", []byte{0, 1, 24, 0, 10, 0, 0}, true, ""},
		{"IPv4 /0", []byte{0, 1, 0, 0}, true, ""},
		{"IPv6 /128", append([]byte{0, 2, 128, 0}, netip.MustParseAddr("fd00::5").AsSlice()...), true, "fd00::5"},
		{"IPv4 /20, bits past the prefix", []byte{0, 1, 20, 0, 10, 0, 0x1F}, false, ""},
		{"IPv4 /20", []byte{0, 1, 20, 0, 10, 0, 0x10}, true, ""},
		{"unknown family", []byte{0, 3, 32, 0, 10, 0, 0, 7}, false, ""},
		{"prefix longer than the family", []byte{0, 1, 33, 0, 10, 0, 0, 7, 0}, false, ""},
		{"address bytes do not match the prefix", []byte{0, 1, 32, 0, 10, 0, 0}, false, ""},
		{"scope set in a query", []byte{0, 1, 32, 32, 10, 0, 0, 7}, false, ""},
		{"too short", []byte{0, 1, 32}, false, ""},
	}
	for _, c := range cases {
		var cs clientSubnet
		if ok := parseClientSubnet(c.data, &cs); ok != c.ok {
			t.Errorf("%s: ok %v, want %v", c.name, ok, c.ok)
			continue
		}
		if !c.ok {
			continue
		}
		host := ""
		if a, ok := cs.host(); ok {
			host = a.String()
		}
		if host != c.host {
			t.Errorf("%s: identity %q, want %q", c.name, host, c.host)
		}
		if got := appendClientSubnet(nil, &cs, 0); string(got[4:]) != string(c.data) {
			t.Errorf("%s: written back as % x, want % x", c.name, got[4:], c.data)
		}
	}
}

// ecsQuery is a query for name carrying an ECS option for addr/bits.
func ecsQuery(name string, qtype uint16, addr string, bits uint8) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(1232, false)
	if addr != "" {
		a := netip.MustParseAddr(addr)
		family := uint16(1)
		if a.Is6() {
			family = 2
		}
		opt := m.IsEdns0()
		opt.Option = append(opt.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: family, SourceNetmask: bits, Address: net.IP(a.AsSlice())})
	}
	return m
}

// answerScope returns the ECS scope prefix of an answer, or -1 when it has
// no ECS option.
func answerScope(r *dns.Msg) int {
	if opt := r.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if s, ok := o.(*dns.EDNS0_SUBNET); ok {
				return int(s.SourceScope)
			}
		}
	}
	return -1
}

// TestClientSubnetRules: who the querier is and what scope the answer
// carries, for trusted and untrusted sources, on both the fast path
// (parseQuery, respondQuery) and the message path (Respond). The node cache
// is 127.0.0.1; the pods are the fixture's (127.0.0.2 system in tp1,
// 127.0.0.3 system in tp2, 127.0.0.11 alpha in tp1, 127.0.0.21 beta in
// tp2).
func TestClientSubnetRules(t *testing.T) {
	b := fixture(t)
	trust := prefixes("127.0.0.1/32")
	plain := newHandler(t, b, Options{TrustedForwarders: trust})
	isolated := newHandler(t, b, Options{TrustedForwarders: trust, Isolation: true})
	const cache, stranger = "127.0.0.1", "127.0.0.5"
	alphaAPI, betaAPI := "api.web.alpha.svc.cluster.local.", "api.web.beta.svc.cluster.local."
	cases := []struct {
		name   string
		h      *Handler
		from   string
		qname  string
		ecs    string
		bits   uint8
		rcode  int
		answer string // the A record's address, "" for none
		scope  int    // -1: no ECS option in the answer
	}{
		{"a tp2 pod through the cache", plain, cache, kdns, "127.0.0.3", 32, dns.RcodeSuccess, "10.1.0.10", 32},
		{"a tp1 pod through the cache", plain, cache, kdns, "127.0.0.2", 32, dns.RcodeSuccess, "10.0.0.10", 32},
		{"beta's pod (tp2) through the cache", plain, cache, kdns, "127.0.0.21", 32, dns.RcodeSuccess, "10.1.0.10", 32},
		{"the cache itself, no ECS", plain, cache, kdns, "", 0, dns.RcodeSuccess, "10.0.0.10", -1},
		{"a forged ECS from a stranger is ignored", plain, stranger, kdns, "127.0.0.3", 32, dns.RcodeSuccess, "10.0.0.10", 0},
		{"a forged ECS from a tp2 pod is ignored", plain, "127.0.0.3", kdns, "127.0.0.2", 32, dns.RcodeSuccess, "10.1.0.10", 0},
		{"a /24 names no one", plain, cache, kdns, "127.0.0.0", 24, dns.RcodeSuccess, "10.0.0.10", 0},
		{"a regular tenant's name is the same for all", plain, cache, betaAPI, "127.0.0.11", 32, dns.RcodeSuccess, "10.1.1.1", 0},
		{"isolation through the cache: own name", isolated, cache, alphaAPI, "127.0.0.11", 32, dns.RcodeSuccess, "10.0.1.1", 32},
		{"isolation through the cache: another tenant's", isolated, cache, betaAPI, "127.0.0.11", 32, dns.RcodeNameError, "", 32},
		{"isolation: a stranger's forged ECS does not unlock", isolated, stranger, alphaAPI, "127.0.0.11", 32, dns.RcodeNameError, "", 0},
		{"isolation: the cache's own query (unknown source)", isolated, cache, alphaAPI, "", 0, dns.RcodeNameError, "", -1},
	}
	for _, c := range cases {
		m := ecsQuery(c.qname, dns.TypeA, c.ecs, c.bits)
		check := func(path string, out []byte) {
			t.Helper()
			r := new(dns.Msg)
			if err := r.Unpack(out); err != nil {
				t.Fatalf("%s, %s: %v", c.name, path, err)
			}
			answer := ""
			if len(r.Answer) == 1 {
				answer = r.Answer[0].(*dns.A).A.String()
			}
			if r.Rcode != c.rcode || answer != c.answer || answerScope(r) != c.scope {
				t.Errorf("%s, %s: %s %q scope %d; want %s %q scope %d", c.name, path,
					dns.RcodeToString[r.Rcode], answer, answerScope(r), dns.RcodeToString[c.rcode], c.answer, c.scope)
			}
		}
		check("message path", c.h.Respond(m, ip(c.from), false))
		pkt, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		st := c.h.pool.Get().(*state)
		st.mayBlock = false
		var q query
		if !parseQuery(pkt, st, &q) {
			t.Fatalf("%s: the fast path does not take the query", c.name)
		}
		var rep reply
		if !c.h.respondQuery(st, &q, ip(c.from), false, &rep) || rep.out == nil {
			t.Fatalf("%s: no fast-path answer", c.name)
		}
		check("fast path", append([]byte(nil), rep.out...))
		st.mayBlock = true
		c.h.pool.Put(st)
	}
}

func TestMalformedClientSubnetIsFormErr(t *testing.T) {
	h := newHandler(t, fixture(t), Options{TrustedForwarders: prefixes("127.0.0.1/32")})
	m := ecsQuery(kdns, dns.TypeA, "", 0)
	pkt, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	// An ECS option whose prefix (/33) is longer than IPv4's: the OPT
	// record's RDATA is the last 8+4 bytes... appended by hand.
	pkt = append(pkt[:len(pkt)-2], 0, 9, 0, 8, 0, 5, 0, 1, 33, 0, 10)
	st := h.pool.Get().(*state)
	defer h.pool.Put(st)
	var q query
	if parseQuery(pkt, st, &q) {
		t.Fatalf("the fast path took a malformed ECS option")
	}
	r := new(dns.Msg)
	if err := r.Unpack(pkt); err == nil {
		out := h.Respond(r, ip("127.0.0.1"), false)
		a := new(dns.Msg)
		if err := a.Unpack(out); err != nil || a.Rcode != dns.RcodeFormatError {
			t.Fatalf("Respond: %v %v, want FORMERR", err, a)
		}
	}
	if err := validateMessage(pkt); err == nil {
		if out := quickReply(pkt, dns.RcodeFormatError); out == nil {
			t.Fatalf("no FORMERR for the slow path")
		}
	}
}

func TestForwardingDropsClientSubnet(t *testing.T) {
	m := ecsQuery("example.com.", dns.TypeA, "127.0.0.3", 32)
	out := withoutClientSubnet(m)
	if answerScope(out) != -1 {
		t.Fatalf("the forwarded query still carries ECS: %v", out)
	}
	if answerScope(m) == -1 {
		t.Fatalf("the query itself lost its ECS option")
	}
	if plain := ecsQuery("example.com.", dns.TypeA, "", 0); withoutClientSubnet(plain) != plain {
		t.Fatalf("a query without ECS was copied")
	}
}

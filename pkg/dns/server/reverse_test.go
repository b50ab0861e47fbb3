package server

import (
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// The reverse zones are answered as kubeadm's CoreDNS answers them with
// "fallthrough in-addr.arpa ip6.arpa" and a forward plugin: PTR for service
// and endpoint addresses here, any other reverse name upstream.
func TestReverseFallthrough(t *testing.T) {
	b := fixture(t)
	f := newForwarder(t, startUpstream(t), true, 0)
	h, err := New(b, Options{Zones: []string{"cluster.local", "in-addr.arpa", "ip6.arpa"}, TTL: 5, Forwarder: f})
	if err != nil {
		t.Fatal(err)
	}
	serial := b.Current().Serial
	unknown := dnsCase{Qname: "1.0.0.192.in-addr.arpa.", Qtype: dns.TypePTR, Forwarded: true}
	known := dnsCase{Qname: "10.0.0.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeSuccess, Answer: []string{"10.0.0.10.in-addr.arpa. 5 IN PTR " + kdns}}

	// Until the first sync a miss may be an address not indexed yet: it is
	// SERVFAIL, not an upstream NXDOMAIN that clients would cache.
	known.checkDirect(t, h, serial)
	dnsCase{Qname: unknown.Qname, Qtype: dns.TypePTR, Rcode: dns.RcodeServerFailure, Ns: []string{soaOf("in-addr.arpa.", serial)}}.checkDirect(t, h, serial)

	h.MarkSynced()
	for _, c := range []dnsCase{
		known,
		unknown,
		{Qname: "5.0.244.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeSuccess, Answer: []string{"5.0.244.10.in-addr.arpa. 5 IN PTR db-0.db.default.svc.cluster.local."}},
		{Qname: "1.1.0.10.in-addr.arpa.", Qtype: dns.TypePTR, From: "127.0.0.21", Rcode: dns.RcodeSuccess, Answer: []string{"1.1.0.10.in-addr.arpa. 5 IN PTR api.web.alpha.svc.cluster.local."}},
		// A pod address that no service has as endpoint: CoreDNS answers
		// PTR for services and endpoints only, so it falls through.
		{Qname: "11.0.0.127.in-addr.arpa.", Qtype: dns.TypePTR, Forwarded: true},
		{Qname: "8.8.8.8.in-addr.arpa.", Qtype: dns.TypePTR, Forwarded: true},
		{Qname: "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.", Qtype: dns.TypePTR, Forwarded: true},
		// Other types, partial and malformed reverse names fall through as
		// in CoreDNS, whose kubernetes plugin finds nothing for them.
		{Qname: "10.0.0.10.in-addr.arpa.", Qtype: dns.TypeA, Forwarded: true},
		{Qname: "10.0.0.10.in-addr.arpa.", Qtype: dns.TypeTXT, Forwarded: true},
		{Qname: "0.10.in-addr.arpa.", Qtype: dns.TypePTR, Forwarded: true},
		{Qname: "x.0.0.10.in-addr.arpa.", Qtype: dns.TypePTR, Forwarded: true},
		// SOA below the apex is NODATA and the apex answers SOA, as
		// CoreDNS does.
		{Qname: "0.10.in-addr.arpa.", Qtype: dns.TypeSOA, Rcode: dns.RcodeSuccess, Ns: []string{soaOf("in-addr.arpa.", serial)}},
		{Qname: "in-addr.arpa.", Qtype: dns.TypeSOA, Rcode: dns.RcodeSuccess, Answer: []string{soaOf("in-addr.arpa.", serial)}, Ns: []string{}},
	} {
		c.checkDirect(t, h, serial)
	}

	// Without a forwarder a miss is NXDOMAIN.
	h2, err := New(b, Options{Zones: []string{"cluster.local", "in-addr.arpa", "ip6.arpa"}, TTL: 5})
	if err != nil {
		t.Fatal(err)
	}
	h2.MarkSynced()
	dnsCase{Qname: unknown.Qname, Qtype: dns.TypePTR, Rcode: dns.RcodeNameError, Ns: []string{soaOf("in-addr.arpa.", serial)}}.checkDirect(t, h2, serial)
}

// Over real sockets the fallthrough goes upstream for sources allowed
// recursion; others get REFUSED, as for any name outside the zones, and
// the upstream never hears of them.
func TestReverseFallthroughFollowsAllowRecursion(t *testing.T) {
	u := serveUpstream(t, "1.0.0.192.in-addr.arpa. 60 IN PTR upstream.example.")
	f := newForwarder(t, u.addr, false, 0)
	s := startServer(t, fixture(t), Options{Forwarder: f, AllowRecursion: prefixes("127.0.0.1/32")})
	for _, network := range []string{"udp", "tcp"} {
		r := ask(t, s.addr, network, "127.0.0.1", "1.0.0.192.in-addr.arpa.", dns.TypePTR, 0)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.PTR).Ptr != "upstream.example." {
			t.Errorf("%s from an allowed source: %v", network, r)
		}
		if r := ask(t, s.addr, network, "127.0.0.9", "1.0.0.192.in-addr.arpa.", dns.TypePTR, 0); r.Rcode != dns.RcodeRefused {
			t.Errorf("%s from another source: %s, want REFUSED", network, dns.RcodeToString[r.Rcode])
		}
		if r := ask(t, s.addr, network, "127.0.0.9", "10.0.0.10.in-addr.arpa.", dns.TypePTR, 0); len(r.Answer) != 1 {
			t.Errorf("%s cluster PTR from another source: %v", network, r)
		}
	}
	if n := u.queries.Load(); n != 2 {
		t.Fatalf("the upstream got %d queries, want the 2 from the allowed source", n)
	}
}

// heldUpstream is a real upstream that holds every query until release is
// called, reporting each arrival on arrived, and then answers NXDOMAIN.
func heldUpstream(t *testing.T) (addr string, arrived <-chan string, release func()) {
	gate := make(chan struct{})
	arrivals := make(chan string, 64)
	addr = runUpstream(t, dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		arrivals <- r.Question[0].Name
		<-gate
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNameError)
		_ = w.WriteMsg(m)
	}))
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return addr, arrivals, release
}

// Reverse-name and ExternalName forwards count against
// MaxConcurrentForwards, on the UDP slow path and over TCP: over the bound
// a reverse miss gets SERVFAIL at once and an ExternalName its CNAME
// alone, while names answered here are answered as usual.
func TestReverseAndExternalNameForwardsAreBounded(t *testing.T) {
	addr, arrived, release := heldUpstream(t)
	f := newForwarder(t, addr, false, time.Minute)
	b := fixture(t)
	s := startServer(t, b, Options{Forwarder: f, MaxConcurrentForwards: 2, ForwardTimeout: time.Minute})
	var wg sync.WaitGroup
	held := map[string]string{"udp": "1.0.0.198.in-addr.arpa.", "tcp": "2.0.0.198.in-addr.arpa."}
	for network, name := range held { // one waits upstream per transport
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypePTR)
			r, _, err := (&dns.Client{Net: network, Timeout: time.Minute}).Exchange(m, s.addr)
			if err != nil || r.Rcode != dns.RcodeNameError {
				t.Errorf("held %s query: %v %v, want the upstream's NXDOMAIN", network, r, err)
			}
		}()
	}
	for range held {
		<-arrived
	}
	// Over UDP the reverse miss over the bound is dropped (see
	// TestForwardsAreBounded); over TCP it is SERVFAIL.
	if r := ask(t, s.addr, "tcp", "", "3.0.0.198.in-addr.arpa.", dns.TypePTR, 0); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("tcp reverse miss over the bound: %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	for _, network := range []string{"udp", "tcp"} {
		if r := ask(t, s.addr, network, "", "ext.default.svc.cluster.local.", dns.TypeA, 0); len(r.Answer) != 1 || r.Answer[0].(*dns.CNAME).Target != "example.com." {
			t.Errorf("%s ExternalName over the bound: %v, want the CNAME alone", network, r)
		}
		if r := ask(t, s.addr, network, "", "10.0.0.10.in-addr.arpa.", dns.TypePTR, 0); len(r.Answer) != 1 {
			t.Errorf("%s cluster PTR while forwarding is saturated: %v", network, r)
		}
	}
	release()
	wg.Wait()
	// The bound is free again: a miss reaches the upstream.
	if r := ask(t, s.addr, "udp", "", "4.0.0.198.in-addr.arpa.", dns.TypePTR, 0); r.Rcode != dns.RcodeNameError {
		t.Errorf("after the upstream answered: %s, want its NXDOMAIN", dns.RcodeToString[r.Rcode])
	}
}

// Under isolation, a regular tenant's address is unknown to another
// tenant's pods: its PTR falls through like any other unknown address, and
// the tenant's names do not leak.
func TestReversePTRIsolationFallsThrough(t *testing.T) {
	b := fixture(t)
	f := newForwarder(t, startUpstream(t), true, 0)
	h, err := New(b, Options{Zones: []string{"cluster.local", "in-addr.arpa"}, TTL: 5, Isolation: true, Forwarder: f})
	if err != nil {
		t.Fatal(err)
	}
	h.MarkSynced()
	serial := b.Current().Serial
	alphaAPI := "1.1.0.10.in-addr.arpa."
	dnsCase{Qname: alphaAPI, Qtype: dns.TypePTR, From: "127.0.0.11", Rcode: dns.RcodeSuccess, Answer: []string{alphaAPI + " 5 IN PTR api.web.alpha.svc.cluster.local."}}.checkDirect(t, h, serial)
	dnsCase{Qname: alphaAPI, Qtype: dns.TypePTR, From: "127.0.0.21", Forwarded: true}.checkDirect(t, h, serial)
}

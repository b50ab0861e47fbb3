package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
)

// externalFixture holds, for the system tenant in tp1 and for tenant alpha
// in tp2, namespace testns with the services of CoreDNS's
// plugin/kubernetes/handler_test.go (svc1, external, external-to-service)
// and more ExternalName services for the cases its code decides without a
// test: a target with and without the trailing dot, an IP address, an
// in-zone target that does not exist, loops and chains, headless and IPv6
// targets. suffix is "testns.svc.cluster.local." or
// "testns.alpha.svc.cluster.local.", the form of the in-zone targets.
func externalFixture(t testing.TB) *index.Builder {
	b := index.NewBuilder(index.Options{Partitions: []string{"tp1", "tp2"}})
	http := []index.Port{{Name: "http", Protocol: "tcp", Port: 80}}
	for tp, tenant := range []string{"system", "alpha"} {
		suffix := "testns.svc.cluster.local."
		if tenant != "system" {
			suffix = "testns." + tenant + ".svc.cluster.local."
		}
		set := func(s *index.Service) {
			s.Tenant, s.Namespace = tenant, "testns"
			if s.Ports == nil {
				s.Ports = http
			}
			b.SetService(tp, s)
		}
		ext := func(name, target string) {
			set(&index.Service{Name: name, Type: index.ExternalName, ExternalName: target})
		}
		b.SetNamespace(tp, tenant, "testns", true)
		set(&index.Service{Name: "svc1", ClusterIPs: ips(fmt.Sprintf("10.%d.0.1", tp))})
		set(&index.Service{Name: "svc6", ClusterIPs: ips(fmt.Sprintf("1234:abcd::%d", tp+1))})
		set(&index.Service{Name: "hdls", Type: index.Headless})
		b.SetEndpointSlice(tp, &index.EndpointSlice{Tenant: tenant, Namespace: "testns", Name: "hdls-1", Service: "hdls", Ports: http,
			Endpoints: []index.Endpoint{{Addrs: ips(fmt.Sprintf("172.%d.0.2", tp))}, {Addrs: ips(fmt.Sprintf("172.%d.0.3", tp))}}})
		ext("external", "ext.interwebs.test")
		ext("external-dot", "ext.interwebs.test.")
		ext("external-to-service", "svc1."+suffix)
		ext("external-to-service-nodot", strings.TrimSuffix("svc1."+suffix, "."))
		ext("external-to-headless", "hdls."+suffix)
		ext("external-to-v6", "svc6."+suffix)
		ext("external-to-missing", "nope."+suffix)
		ext("external-ip", "1.2.3.4")
		ext("external-loop", "external-loop."+suffix)
		ext("external-chain", "external."+suffix)
		// chain-1 → chain-2 → ... → chain-8 → svc1 is 8 CNAMEs, as many as
		// CoreDNS follows; chain-0 → chain-1 is one too many.
		for i := 0; i < 8; i++ {
			ext(fmt.Sprintf("chain-%d", i), fmt.Sprintf("chain-%d.%s", i+1, suffix))
		}
		ext("chain-8", "svc1."+suffix)
	}
	b.Publish()
	return b
}

// externalUpstream is the upstream that knows the targets outside the
// cluster, as CoreDNS's Upstub does in its tests.
func externalUpstream(t *testing.T) *upstream {
	return serveUpstream(t,
		"ext.interwebs.test. 5 IN A 1.2.3.4",
		"ext.interwebs.test. 5 IN AAAA 2001:db8::53",
		"truncated.interwebs.test. 5 IN A 1.2.3.5",
	)
}

// externalCases are the ExternalName cases for names ending in suffix
// ("testns.svc.cluster.local." or "testns.alpha.svc.cluster.local."),
// whose svc1 has address v4 and svc6 v6, and whose headless service has
// endpoints h1 and h2.
func externalCases(suffix, v4, v6, h1, h2 string) []dnsCase {
	n := func(s string) string { return s + "." + suffix }
	cname := func(name, target string) string { return n(name) + " 5 IN CNAME " + target }
	extA := "ext.interwebs.test. 5 IN A 1.2.3.4"
	return []dnsCase{
		// CoreDNS's "CNAME External" and "CNAME External Truncated
		// Lookup" (the truncation is in truncatedCases).
		{Qname: n("external"), Qtype: dns.TypeCNAME, Rcode: dns.RcodeSuccess, Answer: []string{cname("external", "ext.interwebs.test.")}},
		{Qname: n("external"), Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{cname("external", "ext.interwebs.test."), extA}},
		{Qname: n("external"), Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess,
			Answer: []string{cname("external", "ext.interwebs.test."), "ext.interwebs.test. 5 IN AAAA 2001:db8::53"}},
		// The trailing dot of the target makes no difference.
		{Qname: n("external-dot"), Qtype: dns.TypeCNAME, Rcode: dns.RcodeSuccess, Answer: []string{cname("external-dot", "ext.interwebs.test.")}},
		{Qname: n("external-dot"), Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{cname("external-dot", "ext.interwebs.test."), extA}},
		// SRV of an ExternalName is NODATA (CoreDNS's Services drops
		// CNAME-type services for SRV); with port and protocol labels it
		// does not exist (CoreDNS 1.11, #6162); nor do names below it.
		{Qname: n("external"), Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess},
		{Qname: "_http._tcp." + n("external"), Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError},
		{Qname: "_http._tcp." + n("external"), Qtype: dns.TypeCNAME, Rcode: dns.RcodeNameError},
		{Qname: n("endpoint.external"), Qtype: dns.TypeCNAME, Rcode: dns.RcodeNameError},
		{Qname: n("subdomain.subdomain.external"), Qtype: dns.TypeCNAME, Rcode: dns.RcodeNameError},
		// Other types of an existing name are NODATA.
		{Qname: n("external"), Qtype: dns.TypeTXT, Rcode: dns.RcodeSuccess},
		{Qname: n("external"), Qtype: dns.TypeMX, Rcode: dns.RcodeSuccess},
		{Qname: n("external"), Qtype: dns.TypePTR, Rcode: dns.RcodeSuccess},
		// CoreDNS's "CNAME External To Internal Service": the target is
		// answered from the cluster, trailing dot or not.
		{Qname: n("external-to-service"), Qtype: dns.TypeA, Rcode: dns.RcodeSuccess,
			Answer: []string{cname("external-to-service", n("svc1")), n("svc1") + " 5 IN A " + v4}},
		{Qname: n("external-to-service-nodot"), Qtype: dns.TypeA, Rcode: dns.RcodeSuccess,
			Answer: []string{cname("external-to-service-nodot", n("svc1")), n("svc1") + " 5 IN A " + v4}},
		{Qname: n("external-to-service"), Qtype: dns.TypeCNAME, Rcode: dns.RcodeSuccess, Answer: []string{cname("external-to-service", n("svc1"))}},
		// An in-zone target without records of the type takes the CNAME
		// with it: NODATA, as CoreDNS's A() keeps the CNAME only when the
		// target has records.
		{Qname: n("external-to-service"), Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess},
		{Qname: n("external-to-v6"), Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess,
			Answer: []string{cname("external-to-v6", n("svc6")), n("svc6") + " 5 IN AAAA " + v6}},
		{Qname: n("external-to-v6"), Qtype: dns.TypeA, Rcode: dns.RcodeSuccess},
		{Qname: n("external-to-headless"), Qtype: dns.TypeA, Rcode: dns.RcodeSuccess,
			Answer: []string{cname("external-to-headless", n("hdls")), n("hdls") + " 5 IN A " + h1, n("hdls") + " 5 IN A " + h2}},
		{Qname: n("external-to-missing"), Qtype: dns.TypeA, Rcode: dns.RcodeSuccess},
		{Qname: n("external-to-missing"), Qtype: dns.TypeCNAME, Rcode: dns.RcodeSuccess, Answer: []string{cname("external-to-missing", n("nope"))}},
		// Loops and chains: CoreDNS follows at most 8 CNAMEs.
		{Qname: n("external-loop"), Qtype: dns.TypeA, Rcode: dns.RcodeSuccess},
		{Qname: n("external-loop"), Qtype: dns.TypeCNAME, Rcode: dns.RcodeSuccess, Answer: []string{cname("external-loop", n("external-loop"))}},
		{Qname: n("external-chain"), Qtype: dns.TypeA, Rcode: dns.RcodeSuccess,
			Answer: []string{cname("external-chain", n("external")), n("external") + " 5 IN CNAME ext.interwebs.test.", extA}},
		{Qname: n("chain-1"), Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: chain(n, 1, 8, n("svc1")+" 5 IN A "+v4)},
		{Qname: n("chain-0"), Qtype: dns.TypeA, Rcode: dns.RcodeSuccess},
		// An ExternalName that is an IP address makes no CNAME in CoreDNS
		// (HostType is A), so the name does not exist.
		{Qname: n("external-ip"), Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		{Qname: n("external-ip"), Qtype: dns.TypeCNAME, Rcode: dns.RcodeNameError},
		{Qname: n("external-ip"), Qtype: dns.TypeAAAA, Rcode: dns.RcodeNameError},
		{Qname: n("external-ip"), Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError},
	}
}

// chain is the answer of chain-from: the CNAMEs chain-from → ... →
// chain-to → the last record's owner, then the last record.
func chain(n func(string) string, from, to int, last string) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, n(fmt.Sprintf("chain-%d", i))+" 5 IN CNAME "+n(fmt.Sprintf("chain-%d", i+1)))
	}
	target := strings.Fields(last)[0]
	return append(out, n(fmt.Sprintf("chain-%d", to))+" 5 IN CNAME "+target, last)
}

func externalHandler(t *testing.T, o Options) (*Handler, uint32) {
	t.Helper()
	b := externalFixture(t)
	o.Zones, o.TTL = []string{"cluster.local", "in-addr.arpa", "ip6.arpa"}, 5
	h, err := New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	h.MarkSynced()
	return h, b.Current().Serial
}

func externalForwarder(t *testing.T, u *upstream) Forwarder {
	return newForwarder(t, u.addr, false, 0)
}

// ExternalName services answer as in CoreDNS's kubernetes plugin, for
// system-tenant names in the upstream form and for tenant names.
func TestExternalNameAsCoreDNS(t *testing.T) {
	h, serial := externalHandler(t, Options{Forwarder: externalForwarder(t, externalUpstream(t))})
	cases := append(externalCases("testns.svc.cluster.local.", "10.0.0.1", "1234:abcd::1", "172.0.0.2", "172.0.0.3"),
		externalCases("testns.alpha.svc.cluster.local.", "10.1.0.1", "1234:abcd::2", "172.1.0.2", "172.1.0.3")...)
	for _, c := range cases {
		c.checkDirect(t, h, serial)
	}
}

// Without a forwarder, or for a source not allowed recursion, the CNAME to
// a target outside the zones stands alone (the client resolves it), and no
// query goes upstream; in-zone targets are answered all the same.
func TestExternalNameWithoutRecursion(t *testing.T) {
	u := externalUpstream(t)
	local := "127.0.0.1/32"
	for name, o := range map[string]Options{
		"no forwarder":      {},
		"recursion refused": {Forwarder: externalForwarder(t, u), AllowRecursion: prefixes(local)},
	} {
		t.Run(name, func(t *testing.T) {
			h, serial := externalHandler(t, o)
			for _, c := range []dnsCase{
				{Qname: "external.testns.svc.cluster.local.", Qtype: dns.TypeA, From: "10.9.9.9", Rcode: dns.RcodeSuccess,
					Answer: []string{"external.testns.svc.cluster.local. 5 IN CNAME ext.interwebs.test."}},
				{Qname: "external-to-service.testns.alpha.svc.cluster.local.", Qtype: dns.TypeA, From: "10.9.9.9", Rcode: dns.RcodeSuccess,
					Answer: []string{"external-to-service.testns.alpha.svc.cluster.local. 5 IN CNAME svc1.testns.alpha.svc.cluster.local.",
						"svc1.testns.alpha.svc.cluster.local. 5 IN A 10.1.0.1"}},
			} {
				c.checkDirect(t, h, serial)
			}
		})
	}
	if n := u.queries.Load(); n != 0 {
		t.Fatalf("%d queries went upstream for sources not allowed recursion", n)
	}
}

// An upstream answer with TC makes the answer TC, as CoreDNS's "CNAME
// External Truncated Lookup" expects; the client retries over TCP.
func TestExternalNameTruncatedUpstream(t *testing.T) {
	b := index.NewBuilder(index.Options{Partitions: []string{"tp1"}})
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "testns", Name: "external", Type: index.ExternalName,
		ExternalName: "truncated.interwebs.test", Ports: []index.Port{{Port: index.NoPort}}})
	b.Publish()
	h, err := New(b, Options{Zones: []string{"cluster.local"}, TTL: 5, Forwarder: externalForwarder(t, externalUpstream(t))})
	if err != nil {
		t.Fatal(err)
	}
	h.MarkSynced()
	m := new(dns.Msg)
	m.SetQuestion("external.testns.svc.cluster.local.", dns.TypeA)
	r := new(dns.Msg)
	if err := r.Unpack(h.Respond(m, ip("127.0.0.1"), false)); err != nil {
		t.Fatal(err)
	}
	want := parseRRs(t, []string{"external.testns.svc.cluster.local. 5 IN CNAME truncated.interwebs.test.", "truncated.interwebs.test. 5 IN A 1.2.3.5"})
	if !r.Truncated || r.Rcode != dns.RcodeSuccess || !equal(rrStrings(t, r.Answer), want) {
		t.Fatalf("answer %v; want TC with %v", r, want)
	}
}

// Over real sockets: the UDP fast path hands ExternalName answers that
// need the upstream to the slow path, and both transports answer alike.
func TestExternalNameOverSockets(t *testing.T) {
	b := externalFixture(t)
	s := startServer(t, b, Options{Forwarder: externalForwarder(t, externalUpstream(t))})
	all := externalCases("testns.svc.cluster.local.", "10.0.0.1", "1234:abcd::1", "172.0.0.2", "172.0.0.3")
	for _, c := range all {
		switch {
		case c.Qname == "external.testns.svc.cluster.local." && c.Qtype == dns.TypeA,
			c.Qname == "external-to-service.testns.svc.cluster.local." && c.Qtype == dns.TypeA,
			c.Qname == "external-chain.testns.svc.cluster.local.",
			c.Qname == "external-ip.testns.svc.cluster.local." && c.Qtype == dns.TypeA,
			c.Qname == "_http._tcp.external.testns.svc.cluster.local." && c.Qtype == dns.TypeSRV:
			c.check(t, s.addr, b.Current().Serial)
		}
	}
}

// A target inside the zones is looked up as its querier would look it up:
// under isolation, an ExternalName of tenant alpha that points at tenant
// beta's service shows alpha's pods nothing of beta (NODATA), while system
// pods, which see every tenant, get beta's address.
func TestExternalNameKeepsIsolation(t *testing.T) {
	b := fixture(t)
	b.SetService(0, &index.Service{Tenant: "alpha", Namespace: "web", Name: "to-beta", Type: index.ExternalName,
		ExternalName: "api.web.beta.svc.cluster.local.", Ports: []index.Port{{Port: index.NoPort}}})
	b.Publish()
	h, err := New(b, Options{Zones: []string{"cluster.local"}, TTL: 5, Isolation: true})
	if err != nil {
		t.Fatal(err)
	}
	h.MarkSynced()
	serial := b.Current().Serial
	name := "to-beta.web.alpha.svc.cluster.local."
	cname := name + " 5 IN CNAME api.web.beta.svc.cluster.local."
	for _, c := range []dnsCase{
		{Qname: name, Qtype: dns.TypeA, From: "127.0.0.11", Rcode: dns.RcodeSuccess},
		{Qname: name, Qtype: dns.TypeCNAME, From: "127.0.0.11", Rcode: dns.RcodeSuccess, Answer: []string{cname}},
		{Qname: name, Qtype: dns.TypeA, From: "127.0.0.2", Rcode: dns.RcodeSuccess, Answer: []string{cname, "api.web.beta.svc.cluster.local. 5 IN A 10.1.1.1"}},
		{Qname: name, Qtype: dns.TypeA, From: "127.0.0.21", Rcode: dns.RcodeNameError},
	} {
		c.checkDirect(t, h, serial)
	}
}

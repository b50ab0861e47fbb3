package server

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
)

// ownAddr is the server's own (pod) address in the ns.dns tests.
const ownAddr = "10.244.9.53"

// nsFixture is fixture with the server behind kube-dns in tp1 and tp2: each
// partition's kube-dns service has an endpoint at ownAddr, as CoreDNS's pod
// is an endpoint of kube-dns.
func nsFixture(t testing.TB) *index.Builder {
	b := fixture(t)
	for tp := 0; tp < 2; tp++ {
		b.SetEndpointSlice(tp, &index.EndpointSlice{Tenant: "system", Namespace: "kube-system", Name: "kube-dns-x", Service: "kube-dns",
			Ports: []index.Port{{Name: "dns", Protocol: udp, Port: 53}}, Endpoints: []index.Endpoint{{Addrs: ips(ownAddr)}}})
	}
	b.Publish()
	return b
}

func nsHandler(t *testing.T, b *index.Builder, o Options) *Handler {
	t.Helper()
	o.Zones, o.TTL = []string{"cluster.local", "in-addr.arpa", "ip6.arpa"}, 5
	if o.NSAddrs == nil {
		o.NSAddrs = ips(ownAddr)
	}
	h, err := New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	h.MarkSynced()
	return h
}

// ns.dns.<zone> answers, as CoreDNS's nsAddrs does, the cluster IPs of the
// services whose endpoints are the server's own addresses; of the kube-dns
// services of several partitions, the querier's own.
func TestNameServerIsTheQueriersKubeDNS(t *testing.T) {
	b := nsFixture(t)
	h := nsHandler(t, b, Options{})
	serial := b.Current().Serial
	nsA := func(name, a string) string { return name + " 5 IN A " + a }
	revSOA := []string{soaOf("in-addr.arpa.", serial)}
	for _, c := range []dnsCase{
		// An unknown source starts with the system partition (tp1), a
		// pod with its own partition.
		{Qname: "ns.dns.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{nsA("ns.dns.cluster.local.", "10.0.0.10")}},
		{Qname: "ns.dns.cluster.local.", Qtype: dns.TypeA, From: "127.0.0.11", Rcode: dns.RcodeSuccess, Answer: []string{nsA("ns.dns.cluster.local.", "10.0.0.10")}},
		{Qname: "ns.dns.cluster.local.", Qtype: dns.TypeA, From: "127.0.0.21", Rcode: dns.RcodeSuccess, Answer: []string{nsA("ns.dns.cluster.local.", "10.1.0.10")}},
		{Qname: "NS.DNS.cluster.local.", Qtype: dns.TypeA, From: "127.0.0.3", Rcode: dns.RcodeSuccess, Answer: []string{nsA("NS.DNS.cluster.local.", "10.1.0.10")}},
		{Qname: "ns.dns.cluster.local.", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess},
		// The apex NS has the same addresses as glue.
		{Qname: "cluster.local.", Qtype: dns.TypeNS, From: "127.0.0.21", Rcode: dns.RcodeSuccess, Ns: []string{},
			Answer: []string{"cluster.local. 5 IN NS ns.dns.cluster.local."}, Extra: []string{nsA("ns.dns.cluster.local.", "10.1.0.10")}},
		// CoreDNS reads TXT and PTR queries for ns.dns as queries for a
		// service that does not exist; other types are NODATA.
		{Qname: "ns.dns.cluster.local.", Qtype: dns.TypeTXT, Rcode: dns.RcodeNameError},
		{Qname: "ns.dns.cluster.local.", Qtype: dns.TypePTR, Rcode: dns.RcodeNameError},
		{Qname: "ns.dns.cluster.local.", Qtype: dns.TypeMX, Rcode: dns.RcodeSuccess},
		// ns.dns and dns-version exist in the reverse zones too, whose SOA
		// names ns.dns.<zone>.
		{Qname: "ns.dns.in-addr.arpa.", Qtype: dns.TypeA, From: "127.0.0.21", Rcode: dns.RcodeSuccess, Answer: []string{nsA("ns.dns.in-addr.arpa.", "10.1.0.10")}},
		{Qname: "ns.dns.ip6.arpa.", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess, Ns: []string{soaOf("ip6.arpa.", serial)}},
		{Qname: "in-addr.arpa.", Qtype: dns.TypeNS, Rcode: dns.RcodeSuccess, Ns: []string{},
			Answer: []string{"in-addr.arpa. 5 IN NS ns.dns.in-addr.arpa."}, Extra: []string{nsA("ns.dns.in-addr.arpa.", "10.0.0.10")}},
		{Qname: "dns-version.in-addr.arpa.", Qtype: dns.TypeTXT, Rcode: dns.RcodeSuccess, Answer: []string{`dns-version.in-addr.arpa. 28800 IN TXT "1.1.0"`}},
		{Qname: "dns-version.ip6.arpa.", Qtype: dns.TypeTXT, Rcode: dns.RcodeSuccess, Answer: []string{`dns-version.ip6.arpa. 28800 IN TXT "1.1.0"`}},
		{Qname: "dns-version.in-addr.arpa.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: revSOA},
		{Qname: "ns.dns.in-addr.arpa.", Qtype: dns.TypeTXT, Rcode: dns.RcodeNameError, Ns: revSOA},
		// The schema version, Kubernetes DNS specification 2.2.
		{Qname: "dns-version.cluster.local.", Qtype: dns.TypeTXT, Rcode: dns.RcodeSuccess, Answer: []string{`dns-version.cluster.local. 28800 IN TXT "1.1.0"`}},
	} {
		c.checkDirect(t, h, serial)
	}

	// With tp2 as the system partition, unknown sources get tp2's.
	h2 := nsHandler(t, b, Options{SystemPartition: 1})
	dnsCase{Qname: "ns.dns.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{nsA("ns.dns.cluster.local.", "10.1.0.10")}}.checkDirect(t, h2, serial)

	// Over real sockets, both transports.
	s := startServer(t, b, Options{NSAddrs: ips(ownAddr)})
	dnsCase{Qname: "ns.dns.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{nsA("ns.dns.cluster.local.", "10.0.0.10")}}.check(t, s.addr, serial)
}

// As in CoreDNS: a dual-stack kube-dns answers both families, a headless
// one its endpoint addresses, and without a service in front of the server
// ns.dns has the server's own addresses.
func TestNameServerAddresses(t *testing.T) {
	b := index.NewBuilder(index.Options{Partitions: []string{"tp1"}})
	dnsPorts := []index.Port{{Name: "dns", Protocol: udp, Port: 53}}
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "kube-system", Name: "kube-dns", ClusterIPs: ips("10.0.0.10", "fd00::10"), Ports: dnsPorts})
	b.SetEndpointSlice(0, &index.EndpointSlice{Tenant: "system", Namespace: "kube-system", Name: "kube-dns-x", Service: "kube-dns",
		Ports: dnsPorts, Endpoints: []index.Endpoint{{Addrs: ips(ownAddr, "fd00:244::53")}}})
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "kube-system", Name: "dns-hl", Type: index.Headless, Ports: dnsPorts})
	b.SetEndpointSlice(0, &index.EndpointSlice{Tenant: "system", Namespace: "kube-system", Name: "dns-hl-x", Service: "dns-hl",
		Ports: dnsPorts, Endpoints: []index.Endpoint{{Addrs: ips("10.244.8.1")}, {Addrs: ips("10.244.8.2")}}})
	b.Publish()
	serial := b.Current().Serial
	cases := []struct {
		own    []string
		qtype  uint16
		answer []string
	}{
		// Both own addresses lead to kube-dns; its addresses come once.
		{[]string{ownAddr, "fd00:244::53"}, dns.TypeA, []string{"10.0.0.10"}},
		{[]string{ownAddr, "fd00:244::53"}, dns.TypeAAAA, []string{"fd00::10"}},
		{[]string{"10.244.8.2"}, dns.TypeA, []string{"10.244.8.1", "10.244.8.2"}},
		{[]string{"10.244.7.7", "fd00::7"}, dns.TypeA, []string{"10.244.7.7"}},
		{[]string{"10.244.7.7", "fd00::7"}, dns.TypeAAAA, []string{"fd00::7"}},
	}
	for _, c := range cases {
		h := nsHandler(t, b, Options{NSAddrs: ips(c.own...)})
		want := []string{}
		for _, a := range c.answer {
			want = append(want, "ns.dns.cluster.local. 5 IN "+dns.TypeToString[c.qtype]+" "+a)
		}
		dnsCase{Qname: "ns.dns.cluster.local.", Qtype: c.qtype, Rcode: dns.RcodeSuccess, Answer: want}.checkDirect(t, h, serial)
	}
}

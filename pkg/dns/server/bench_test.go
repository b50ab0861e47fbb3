package server

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
)

// benchIndex holds n ClusterIP and n headless services per partition.
func benchIndex(b *testing.B, tps, n int) *index.Builder {
	names := make([]string, tps)
	for i := range names {
		names[i] = fmt.Sprintf("tp%d", i+1)
	}
	ib := index.NewBuilder(index.Options{Partitions: names})
	for tp := 0; tp < tps; tp++ {
		tenant := fmt.Sprintf("tenant%d", tp)
		for _, t := range []string{"system", tenant} {
			for i := 0; i < n; i++ {
				ns := fmt.Sprintf("ns%d", i%100)
				ip := netip.AddrFrom4([4]byte{10, byte(tp*2 + len(t)%2), byte(i >> 8), byte(i)})
				ib.SetService(tp, &index.Service{Tenant: t, Namespace: ns, Name: fmt.Sprintf("svc%d", i), ClusterIPs: []netip.Addr{ip},
					Ports: []index.Port{{Name: "http", Protocol: "TCP", Port: 80}}})
				ib.SetService(tp, &index.Service{Tenant: t, Namespace: ns, Name: fmt.Sprintf("hl%d", i), Type: index.Headless,
					Ports: []index.Port{{Name: "http", Protocol: "TCP", Port: 80}}})
				ib.SetEndpointSlice(tp, &index.EndpointSlice{Tenant: t, Namespace: ns, Name: fmt.Sprintf("hl%d-x", i), Service: fmt.Sprintf("hl%d", i),
					Ports:     []index.Port{{Name: "http", Protocol: "TCP", Port: 80}},
					Endpoints: []index.Endpoint{{Addrs: []netip.Addr{netip.AddrFrom4([4]byte{10, 200 + byte(tp), byte(i >> 8), byte(i)})}}}})
			}
		}
	}
	ib.Publish()
	return ib
}

func benchRespond(b *testing.B, name string, qtype uint16) {
	benchRespondFrom(b, name, qtype, "")
}

// benchRespondFrom is benchRespond with an ECS option naming ecs, sent by
// a trusted node cache, when ecs is not empty.
func benchRespondFrom(b *testing.B, name string, qtype uint16, ecs string) {
	ib := benchIndex(b, 3, 1000)
	h, err := New(ib, Options{Zones: []string{"cluster.local", "in-addr.arpa"}, TTL: 5, Pods: PodsInsecure,
		TrustedForwarders: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	if err != nil {
		b.Fatal(err)
	}
	h.MarkSynced()
	m := ecsQuery(name, qtype, ecs, 32)
	src := netip.MustParseAddr("127.0.0.1")
	st := h.pool.Get().(*state)
	var rep reply
	h.respond(st, m, src, false, &rep)
	out, rcode := rep.out, rep.rcode
	var check dns.Msg
	if err := check.Unpack(out); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s %s: %s, %d answers", name, dns.TypeToString[qtype], dns.RcodeToString[rcode], len(check.Answer))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.respond(st, m, src, false, &rep)
	}
}

func BenchmarkLookupTenantA(b *testing.B) {
	benchRespond(b, "svc500.ns0.tenant1.svc.cluster.local.", dns.TypeA)
}

func BenchmarkLookupLegacyA(b *testing.B) {
	benchRespond(b, "svc500.ns0.svc.cluster.local.", dns.TypeA)
}

// BenchmarkLookupLegacyAClientSubnet is LookupLegacyA from a node cache
// naming the pod in an ECS option (the answer is scoped /32).
func BenchmarkLookupLegacyAClientSubnet(b *testing.B) {
	benchRespondFrom(b, "svc500.ns0.svc.cluster.local.", dns.TypeA, "10.0.1.244")
}

func BenchmarkLookupHeadlessA(b *testing.B) {
	benchRespond(b, "hl500.ns0.tenant1.svc.cluster.local.", dns.TypeA)
}

func BenchmarkLookupSRV(b *testing.B) {
	benchRespond(b, "_http._tcp.svc500.ns0.tenant1.svc.cluster.local.", dns.TypeSRV)
}

func BenchmarkLookupNXDOMAIN(b *testing.B) {
	benchRespond(b, "missing.ns0.tenant1.svc.cluster.local.", dns.TypeA)
}

func BenchmarkLookupPTR(b *testing.B) {
	benchRespond(b, "244.1.1.10.in-addr.arpa.", dns.TypePTR)
}

// BenchmarkServeDNS includes the miekg/dns request object and the metrics,
// as a query over a socket pays them.
func BenchmarkServeDNS(b *testing.B) {
	ib := benchIndex(b, 3, 1000)
	h, err := New(ib, Options{Zones: []string{"cluster.local"}, TTL: 5, Metrics: NewMetrics(nil)})
	if err != nil {
		b.Fatal(err)
	}
	h.MarkSynced()
	m := new(dns.Msg)
	m.SetQuestion("svc500.ns0.tenant1.svc.cluster.local.", dns.TypeA)
	w := newDiscardWriter()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ServeDNS(w, m)
	}
}

package server

import (
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
)

const (
	kdns = "kube-dns.kube-system.svc.cluster.local."
)

// TestRecords checks whole answers, as a client gets them, without
// sockets; TestRecordsOverSockets runs a few over UDP and TCP.
func TestRecords(t *testing.T) {
	b := fixture(t)
	h := newHandler(t, b, Options{Pods: PodsInsecure})
	serial := b.Current().Serial
	cases := []dnsCase{
		// ClusterIP service, legacy system name, asked by a tp1 pod (tp2 has a
		// kube-dns too: TestUnknownQuerierGetsTTLZero has the unknown source).
		{Qname: kdns, From: "127.0.0.2", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{kdns + " 5 IN A 10.0.0.10"}},
		{Qname: kdns, From: "127.0.0.2", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess},
		{Qname: kdns, From: "127.0.0.2", Qtype: dns.TypeMX, Rcode: dns.RcodeSuccess},
		{Qname: kdns, From: "127.0.0.2", Qtype: dns.TypeTXT, Rcode: dns.RcodeSuccess},
		{Qname: kdns, From: "127.0.0.2", Qtype: dns.TypePTR, Rcode: dns.RcodeSuccess},
		{Qname: kdns, From: "127.0.0.2", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
			Answer: []string{kdns + " 5 IN SRV 0 33 53 " + kdns, kdns + " 5 IN SRV 0 33 9153 " + kdns},
			Extra:  []string{kdns + " 5 IN A 10.0.0.10"}},
		{Qname: "_dns._udp." + kdns, From: "127.0.0.2", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
			Answer: []string{"_dns._udp." + kdns + " 5 IN SRV 0 100 53 " + kdns},
			Extra:  []string{kdns + " 5 IN A 10.0.0.10"}},
		{Qname: "_dns._udp." + kdns, From: "127.0.0.2", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{"_dns._udp." + kdns + " 5 IN A 10.0.0.10"}},
		{Qname: "_http._tcp." + kdns, From: "127.0.0.2", Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError},
		{Qname: "nope.kube-system.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		{Qname: "kube-system.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess},
		{Qname: "nons.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		{Qname: "svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess},
		{Qname: "pod.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess},
		{Qname: "cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess},
		{Qname: "cluster.local.", Qtype: dns.TypeSOA, Rcode: dns.RcodeSuccess, Answer: []string{soa(serial)}, Ns: []string{}},
		{Qname: "cluster.local.", Qtype: dns.TypeNS, Rcode: dns.RcodeSuccess,
			Answer: []string{"cluster.local. 5 IN NS ns.dns.cluster.local."}, Ns: []string{},
			Extra: []string{"ns.dns.cluster.local. 5 IN A 127.0.0.1"}},
		{Qname: "ns.dns.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{"ns.dns.cluster.local. 5 IN A 127.0.0.1"}},
		{Qname: "foo.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		{Qname: "a.b.c.d.e.f.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		{Qname: "dns-version.cluster.local.", Qtype: dns.TypeTXT, Rcode: dns.RcodeSuccess, Answer: []string{`dns-version.cluster.local. 28800 IN TXT "1.1.0"`}},
		{Qname: "dns-version.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		// Headless: one record per ready endpoint; per-endpoint names; SRV.
		{Qname: "db.default.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess,
			Answer: []string{"db.default.svc.cluster.local. 5 IN A 10.244.0.5", "db.default.svc.cluster.local. 5 IN A 10.244.0.6"}},
		{Qname: "db-0.db.default.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess,
			Answer: []string{"db-0.db.default.svc.cluster.local. 5 IN A 10.244.0.5"}},
		{Qname: "10-244-0-6.db.default.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess,
			Answer: []string{"10-244-0-6.db.default.svc.cluster.local. 5 IN A 10.244.0.6"}},
		{Qname: "db-9.db.default.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		{Qname: "10-0-0-1.kubernetes.default.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		{Qname: "_mysql._tcp.db.default.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
			Answer: []string{
				"_mysql._tcp.db.default.svc.cluster.local. 5 IN SRV 0 50 3306 db-0.db.default.svc.cluster.local.",
				"_mysql._tcp.db.default.svc.cluster.local. 5 IN SRV 0 50 3306 10-244-0-6.db.default.svc.cluster.local.",
			},
			Extra: []string{"db-0.db.default.svc.cluster.local. 5 IN A 10.244.0.5", "10-244-0-6.db.default.svc.cluster.local. 5 IN A 10.244.0.6"}},
		{Qname: "empty.default.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		// Dual-stack, ExternalName, no ports.
		{Qname: "dual.default.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{"dual.default.svc.cluster.local. 5 IN A 10.0.0.20"}},
		{Qname: "dual.default.svc.cluster.local.", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess, Answer: []string{"dual.default.svc.cluster.local. 5 IN AAAA fd00::20"}},
		{Qname: "dual.default.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
			Answer: []string{"dual.default.svc.cluster.local. 5 IN SRV 0 50 80 dual.default.svc.cluster.local."},
			Extra:  []string{"dual.default.svc.cluster.local. 5 IN A 10.0.0.20", "dual.default.svc.cluster.local. 5 IN AAAA fd00::20"}},
		{Qname: "ext.default.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{"ext.default.svc.cluster.local. 5 IN CNAME example.com."}},
		{Qname: "ext.default.svc.cluster.local.", Qtype: dns.TypeCNAME, Rcode: dns.RcodeSuccess, Answer: []string{"ext.default.svc.cluster.local. 5 IN CNAME example.com."}},
		{Qname: "ext.default.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess},
		{Qname: "noports.default.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{"noports.default.svc.cluster.local. 5 IN A 10.0.0.30"}},
		{Qname: "noports.default.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess},
		// Tenant-aware names.
		{Qname: "api.web.alpha.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{"api.web.alpha.svc.cluster.local. 5 IN A 10.0.1.1"}},
		{Qname: "api.web.beta.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{"api.web.beta.svc.cluster.local. 5 IN A 10.1.1.1"}},
		{Qname: "_http._tcp.api.web.beta.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
			Answer: []string{"_http._tcp.api.web.beta.svc.cluster.local. 5 IN SRV 0 100 80 api.web.beta.svc.cluster.local."},
			Extra:  []string{"api.web.beta.svc.cluster.local. 5 IN A 10.1.1.1"}},
		{Qname: "kube-dns.kube-system.system.svc.cluster.local.", From: "127.0.0.2", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{"kube-dns.kube-system.system.svc.cluster.local. 5 IN A 10.0.0.10"}},
		{Qname: "alpha.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess},
		{Qname: "web.alpha.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess},
		{Qname: "nope.web.alpha.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		{Qname: "api.web.delta.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		// gamma is in tp2 and tp3: the lower index wins.
		{Qname: "s.x.gamma.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{"s.x.gamma.svc.cluster.local. 5 IN A 10.1.2.1"}},
		// Pods (insecure), legacy and tenant forms.
		{Qname: "10-0-0-99.default.pod.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{"10-0-0-99.default.pod.cluster.local. 5 IN A 10.0.0.99"}},
		{Qname: "fd00--1.default.pod.cluster.local.", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess, Answer: []string{"fd00--1.default.pod.cluster.local. 5 IN AAAA fd00::1"}},
		{Qname: "10-0-0-99.nons.pod.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		{Qname: "bad.default.pod.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		{Qname: "1-2-3-4.web.alpha.pod.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{"1-2-3-4.web.alpha.pod.cluster.local. 5 IN A 1.2.3.4"}},
		// PTR for service and endpoint addresses.
		{Qname: "10.0.0.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeSuccess, Answer: []string{"10.0.0.10.in-addr.arpa. 5 IN PTR " + kdns}},
		{Qname: "10.0.1.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeSuccess, Answer: []string{"10.0.1.10.in-addr.arpa. 5 IN PTR kube-dns.kube-system.svc.cluster.local."}},
		{Qname: "1.1.0.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeSuccess, Answer: []string{"1.1.0.10.in-addr.arpa. 5 IN PTR api.web.alpha.svc.cluster.local."}},
		{Qname: "5.0.244.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeSuccess, Answer: []string{"5.0.244.10.in-addr.arpa. 5 IN PTR db-0.db.default.svc.cluster.local."}},
		{Qname: "0.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeSuccess,
			Answer: []string{"0.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa. 5 IN PTR dual.default.svc.cluster.local."}},
		{Qname: "9.9.9.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeNameError, Ns: []string{"in-addr.arpa. 5 IN SOA ns.dns.in-addr.arpa. hostmaster.in-addr.arpa. " + itoa(serial) + " 7200 1800 86400 5"}},
		// Zone transfers are refused; other zones are refused without a forwarder.
		{Qname: "cluster.local.", Qtype: dns.TypeAXFR, Rcode: dns.RcodeRefused, Ns: []string{}},
		{Qname: "cluster.local.", Qtype: dns.TypeIXFR, Rcode: dns.RcodeRefused, Ns: []string{}},
	}
	for _, c := range cases {
		c.checkDirect(t, h, serial)
	}
}

// TestRecordsOverSockets: the same answers over UDP and TCP, through the
// fast path and the miekg/dns server.
func TestRecordsOverSockets(t *testing.T) {
	for _, batch := range []int{32, 1} {
		t.Run(fmt.Sprintf("udp-batch-%d", batch), func(t *testing.T) { testRecordsOverSockets(t, batch) })
	}
}

func testRecordsOverSockets(t *testing.T, batch int) {
	b := fixture(t)
	s := startServer(t, b, Options{Pods: PodsInsecure, UDPBatch: batch})
	serial := b.Current().Serial
	for _, c := range []dnsCase{
		{Qname: kdns, From: "127.0.0.2", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{kdns + " 5 IN A 10.0.0.10"}},
		{Qname: kdns, From: "127.0.0.3", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{kdns + " 5 IN A 10.1.0.10"}},
		// An unknown source: tp1's, not to be cached (TTL 0), on the fast path too.
		{Qname: kdns, From: "127.0.0.99", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []string{kdns + " 0 IN A 10.0.0.10"}},
		{Qname: "_dns._udp." + kdns, From: "127.0.0.2", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
			Answer: []string{"_dns._udp." + kdns + " 5 IN SRV 0 100 53 " + kdns},
			Extra:  []string{kdns + " 5 IN A 10.0.0.10"}},
		{Qname: "nope.kube-system.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError},
		{Qname: "10.0.0.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeSuccess, Answer: []string{"10.0.0.10.in-addr.arpa. 5 IN PTR " + kdns}},
		{Qname: "cluster.local.", Qtype: dns.TypeAXFR, Rcode: dns.RcodeRefused, Ns: []string{}},
	} {
		c.check(t, s.addr, serial)
	}
}

func TestOtherZonesRefusedWithoutForwarder(t *testing.T) {
	s := startServer(t, fixture(t), Options{})
	r := ask(t, s.addr, "udp", "", "example.org.", dns.TypeA, 0)
	if r.Rcode != dns.RcodeRefused {
		t.Fatalf("rcode %s, want REFUSED", dns.RcodeToString[r.Rcode])
	}
}

func TestCasePreserved(t *testing.T) {
	s := startServer(t, fixture(t), Options{})
	for _, network := range []string{"udp", "tcp"} {
		q := "KUBE-DNS.Kube-System.SVC.Cluster.Local."
		r := ask(t, s.addr, network, "", q, dns.TypeA, 0)
		if len(r.Answer) != 1 || r.Answer[0].Header().Name != q || r.Question[0].Name != q {
			t.Fatalf("%s: answer %v for %s", network, r.Answer, q)
		}
		r = ask(t, s.addr, network, "", "NOPE.Kube-System.SVC.Cluster.Local.", dns.TypeA, 0)
		if r.Rcode != dns.RcodeNameError || r.Question[0].Name != "NOPE.Kube-System.SVC.Cluster.Local." {
			t.Fatalf("%s: %v", network, r)
		}
	}
}

func TestSystemServiceAnsweredFromSourcePartition(t *testing.T) {
	h := newHandler(t, fixture(t), Options{SystemPartition: 0})
	for _, c := range []struct{ from, want string }{
		{"127.0.0.2", "10.0.0.10"},  // a tp1 pod
		{"127.0.0.3", "10.1.0.10"},  // a tp2 pod
		{"127.0.0.21", "10.1.0.10"}, // beta's pod, in tp2
		{"127.0.0.99", "10.0.0.10"}, // unknown: the system partition
	} {
		r := askDirect(t, h, false, c.from, kdns, dns.TypeA)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != c.want {
			t.Errorf("from %s: %v, want %s", c.from, r.Answer, c.want)
		}
	}
	h2 := newHandler(t, fixture(t), Options{SystemPartition: 1})
	r := askDirect(t, h2, false, "127.0.0.99", kdns, dns.TypeA)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.1.0.10" {
		t.Errorf("--system-partition=1, unknown source: %v", r.Answer)
	}
	// A system service that exists only in tp1 is still found from tp2.
	r = askDirect(t, h, false, "127.0.0.3", "kubernetes.default.svc.cluster.local.", dns.TypeA)
	if len(r.Answer) != 1 {
		t.Errorf("kubernetes from tp2: %v", r)
	}
}

// A system name that several partitions have, answered to an unknown
// querier (a pod not reported yet) from the system partition, has TTL 0: no
// cache may keep that answer for the pod. Known queriers, names only one
// partition has, tenants' names and names nobody has keep the configured
// TTL.
func TestUnknownQuerierGetsTTLZero(t *testing.T) {
	h := newHandler(t, fixture(t), Options{SystemPartition: 0, TTL: 30})
	for _, c := range []struct {
		from, name string
		want       uint32
	}{
		{"127.0.0.99", kdns, 0},                                // unknown, system name in two TPs
		{"127.0.0.3", kdns, 30},                                // a tp2 pod
		{"127.0.0.2", kdns, 30},                                // a tp1 pod
		{"127.0.0.99", "api.web.alpha.svc.cluster.local.", 30}, // a tenant's name does not depend on who asks
		{"127.0.0.99", "nosuch.kube-system.svc.cluster.local.", 30},
		{"127.0.0.99", "kubernetes.default.svc.cluster.local.", 30}, // tp1's alone
	} {
		r := askDirect(t, h, false, c.from, c.name, dns.TypeA)
		rrs := append(append([]dns.RR{}, r.Answer...), r.Ns...)
		if len(rrs) == 0 {
			t.Errorf("%s from %s: no records (%s)", c.name, c.from, dns.RcodeToString[r.Rcode])
			continue
		}
		for _, rr := range rrs {
			if rr.Header().Ttl != c.want {
				t.Errorf("%s from %s: %v has TTL %d, want %d", c.name, c.from, rr, rr.Header().Ttl, c.want)
			}
		}
	}
}

// TestUnknownQuerierTTLFollowsPartitions: the TTL 0 rule follows the
// index as it changes: a system name one partition has gets the TTL, and
// TTL 0 once a second partition has it too, until that one drops it.
func TestUnknownQuerierTTLFollowsPartitions(t *testing.T) {
	b := fixture(t)
	h := newHandler(t, b, Options{SystemPartition: 0, TTL: 30})
	const name = "kubernetes.default.svc.cluster.local."
	kubernetes := &index.Service{Tenant: "system", Namespace: "default", Name: "kubernetes", ClusterIPs: ips("10.2.0.1"),
		Ports: []index.Port{{Name: "https", Protocol: tcp, Port: 443}}}
	for i, c := range []struct {
		change func()
		want   uint32
	}{
		{func() {}, 30}, // tp1's alone
		{func() { b.SetService(2, kubernetes) }, 0}, // tp3's too
		{func() { b.SetService(1, kubernetes) }, 0}, // and tp2's
		{func() { b.DeleteService(2, "system", "default", "kubernetes") }, 0},
		{func() { b.DeleteService(1, "system", "default", "kubernetes") }, 30},
	} {
		c.change()
		b.Publish()
		r := askDirect(t, h, false, "127.0.0.99", name, dns.TypeA)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.0.0.1" {
			t.Fatalf("step %d: %v, want tp1's kubernetes", i, r)
		}
		if ttl := r.Answer[0].Header().Ttl; ttl != c.want {
			t.Errorf("step %d: TTL %d, want %d", i, ttl, c.want)
		}
	}
}

func TestTenantIsolation(t *testing.T) {
	b := fixture(t)
	deny := newHandler(t, b, Options{Isolation: true})
	allow := newHandler(t, b, Options{Isolation: true, AllowUnknownSources: true})
	open := newHandler(t, b, Options{})
	cases := []struct {
		h     *Handler
		from  string
		name  string
		rcode int
	}{
		{deny, "127.0.0.11", "api.web.alpha.svc.cluster.local.", dns.RcodeSuccess},
		{deny, "127.0.0.11", "api.web.beta.svc.cluster.local.", dns.RcodeNameError},
		{deny, "127.0.0.11", "web.beta.svc.cluster.local.", dns.RcodeNameError},
		{deny, "127.0.0.11", "beta.svc.cluster.local.", dns.RcodeNameError},
		{deny, "127.0.0.21", "api.web.alpha.svc.cluster.local.", dns.RcodeNameError},
		{deny, "127.0.0.11", kdns, dns.RcodeSuccess},                             // system names stay visible
		{deny, "127.0.0.2", "api.web.beta.svc.cluster.local.", dns.RcodeSuccess}, // system pods see all
		{deny, "127.0.0.99", "api.web.alpha.svc.cluster.local.", dns.RcodeNameError},
		{deny, "127.0.0.99", kdns, dns.RcodeSuccess},
		{allow, "127.0.0.99", "api.web.alpha.svc.cluster.local.", dns.RcodeSuccess},
		{allow, "127.0.0.11", "api.web.beta.svc.cluster.local.", dns.RcodeNameError},
		{open, "127.0.0.11", "api.web.beta.svc.cluster.local.", dns.RcodeSuccess},
	}
	for _, c := range cases {
		r := askDirect(t, c.h, false, c.from, c.name, dns.TypeA)
		if r.Rcode != c.rcode {
			t.Errorf("%s from %s: %s, want %s", c.name, c.from, dns.RcodeToString[r.Rcode], dns.RcodeToString[c.rcode])
		}
	}
	// PTR of another tenant's address is hidden too.
	r := askDirect(t, deny, false, "127.0.0.21", "1.1.0.10.in-addr.arpa.", dns.TypePTR)
	if r.Rcode != dns.RcodeNameError {
		t.Errorf("PTR of alpha's service from beta: %v", r)
	}
}

func TestServfailBeforeSync(t *testing.T) {
	b := index.NewBuilder(index.Options{Partitions: []string{"tp1"}})
	h, err := New(b, Options{Zones: []string{"cluster.local"}, TTL: 5})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen("127.0.0.1:0", 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := testContext(t)
	done := make(chan struct{})
	go func() { defer close(done); _ = Serve(ctx, l, h) }()
	defer func() { cancel(); <-done; l.Close() }()
	for _, network := range []string{"udp", "tcp"} {
		r := ask(t, l.Addr(), network, "", kdns, dns.TypeA, 0)
		if r.Rcode != dns.RcodeServerFailure {
			t.Fatalf("%s before sync: %s, want SERVFAIL", network, dns.RcodeToString[r.Rcode])
		}
	}
	b.SetNamespace(0, "system", "kube-system", true)
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "kube-system", Name: "kube-dns", ClusterIPs: ips("10.0.0.10"), Ports: []index.Port{{Port: index.NoPort}}})
	b.Publish()
	if r := ask(t, l.Addr(), "udp", "", kdns, dns.TypeA, 0); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Fatalf("known name before sync: %v", r)
	}
	h.MarkSynced()
	if r := ask(t, l.Addr(), "udp", "", "nope."+kdns[9:], dns.TypeA, 0); r.Rcode != dns.RcodeNameError {
		t.Fatalf("after sync: %v", r)
	}
}

func TestTruncationAndTCP(t *testing.T) {
	b := index.NewBuilder(index.Options{Partitions: []string{"tp1"}})
	b.SetNamespace(0, "system", "default", true)
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "default", Name: "big", Type: index.Headless, Ports: []index.Port{{Name: "http", Protocol: tcp, Port: 80}}})
	var eps []index.Endpoint
	for i := 0; i < 200; i++ {
		eps = append(eps, index.Endpoint{Addrs: ips(net.IPv4(10, 9, byte(i/250), byte(i%250+1)).String())})
	}
	b.SetEndpointSlice(0, &index.EndpointSlice{Tenant: "system", Namespace: "default", Name: "big-1", Service: "big", Ports: []index.Port{{Name: "http", Protocol: tcp, Port: 80}}, Endpoints: eps})
	b.Publish()
	s := startServer(t, b, Options{})
	name := "big.default.svc.cluster.local."
	r := ask(t, s.addr, "udp", "", name, dns.TypeA, 0)
	if !r.Truncated || len(r.Answer) >= 200 {
		t.Fatalf("udp without EDNS0: truncated=%v answers=%d", r.Truncated, len(r.Answer))
	}
	r = ask(t, s.addr, "udp", "", name, dns.TypeA, 1232)
	r.Compress = true
	if !r.Truncated || r.IsEdns0() == nil || r.Len() > 1232 {
		t.Fatalf("udp with EDNS0 1232: truncated=%v opt=%v len=%d", r.Truncated, r.IsEdns0(), r.Len())
	}
	// A client asking for more still gets at most 1232 bytes over UDP: a
	// small query must not draw a large answer at a spoofed address.
	for _, size := range []uint16{4096, 65535} {
		r = ask(t, s.addr, "udp", "", name, dns.TypeA, size)
		r.Compress = true
		if !r.Truncated || r.IsEdns0() == nil || r.Len() > 1232 {
			t.Fatalf("udp with EDNS0 %d: truncated=%v len=%d", size, r.Truncated, r.Len())
		}
	}
	r = ask(t, s.addr, "tcp", "", name, dns.TypeA, 0)
	if r.Truncated || len(r.Answer) != 200 {
		t.Fatalf("tcp: truncated=%v answers=%d", r.Truncated, len(r.Answer))
	}
	r = ask(t, s.addr, "tcp", "", name, dns.TypeSRV, 0)
	if r.Truncated || len(r.Answer) != 200 || len(r.Extra) != 200 || r.Answer[0].(*dns.SRV).Weight != 1 {
		t.Fatalf("tcp SRV: truncated=%v answers=%d extra=%d", r.Truncated, len(r.Answer), len(r.Extra))
	}
}

func TestEDNS(t *testing.T) {
	s := startServer(t, fixture(t), Options{})
	r := ask(t, s.addr, "udp", "", kdns, dns.TypeA, 1232)
	opt := r.IsEdns0()
	if opt == nil || opt.Version() != 0 || len(r.Answer) != 1 {
		t.Fatalf("EDNS0 answer: %v", r)
	}
	// EDNS version 1 gets BADVERS.
	m := new(dns.Msg)
	m.SetQuestion(kdns, dns.TypeA)
	m.SetEdns0(1232, true)
	m.IsEdns0().SetVersion(1)
	resp, err := dns.Exchange(m, s.addr)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Rcode != dns.RcodeBadVers || len(resp.Answer) != 0 || !resp.IsEdns0().Do() {
		t.Fatalf("EDNS version 1: rcode %d %v", resp.Rcode, resp)
	}
}

func TestMalformedPackets(t *testing.T) {
	s := startServer(t, fixture(t), Options{})
	conn, err := net.Dial("udp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	good := new(dns.Msg)
	good.SetQuestion(kdns, dns.TypeA)
	wire, _ := good.Pack()
	bad := [][]byte{
		{},
		{0, 1},
		wire[:14],
		append(append([]byte{}, wire[:12]...), 0xC0, 0x0C, 0, 1, 0, 1),           // a pointer loop
		func() []byte { b := append([]byte{}, wire...); b[5] = 2; return b }(),   // qdcount 2
		func() []byte { b := append([]byte{}, wire...); b[12] = 70; return b }(), // label too long
	}
	for _, p := range bad {
		_, _ = conn.Write(p)
	}
	// The server is still answering.
	if r := ask(t, s.addr, "udp", "", kdns, dns.TypeA, 0); len(r.Answer) != 1 {
		t.Fatalf("after malformed packets: %v", r)
	}
	// A packet whose question cannot be read gets FORMERR.
	fe := append(append([]byte{}, wire[:12]...), 0xC0, 0x0C, 0, 1, 0, 1)
	c := &dns.Conn{Conn: conn}
	_, _ = conn.Write(fe)
	resp, err := c.ReadMsg()
	if err == nil && resp.Rcode != dns.RcodeFormatError {
		t.Fatalf("malformed question: rcode %s", dns.RcodeToString[resp.Rcode])
	}
}

// TestServeStopsWhenCancelledAtOnce: a cancel that lands before the servers
// have started must still end Serve.
func TestServeStopsWhenCancelledAtOnce(t *testing.T) {
	for _, h := range []dns.Handler{dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {}), mustHandler(t)} {
		for i := 0; i < 20; i++ {
			l, err := Listen("127.0.0.1:0", 2)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := testContext(t)
			cancel()
			if err := Serve(ctx, l, h); err != nil {
				t.Fatal(err)
			}
			l.Close()
		}
	}
}

func mustHandler(t *testing.T) *Handler {
	h, err := New(fixture(t), Options{Zones: []string{"cluster.local"}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// askFrom is ask for another goroutine: it returns the error.
func askFrom(addr, network, from, name string) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	c := &dns.Client{Net: network, Dialer: &net.Dialer{}, Timeout: 20 * time.Second}
	if network == "tcp" {
		c.Dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	} else {
		c.Dialer.LocalAddr = &net.UDPAddr{IP: net.ParseIP(from)}
	}
	r, _, err := c.Exchange(m, addr)
	return r, err
}

// A new pod's question for an ExternalName whose target is a system name
// several TPs have waits as well, and once the pod is known the whole
// answer is asked again: the CNAME and its own TP's address for the target
// (the first answer read the target's name over the question's).
func TestUnknownPodWaitKeepsTheCNAME(t *testing.T) {
	b := fixture(t)
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "default", Name: "to-dns", Type: index.ExternalName,
		ExternalName: kdns, Ports: []index.Port{{Port: index.NoPort}}})
	b.Publish()
	s := startServer(t, b, Options{PodCIDRs: prefixes("127.0.0.0/25"), UnknownPodWait: 20 * time.Second})
	const from, name = "127.0.0.70", "to-dns.default.svc.cluster.local."
	type answer struct {
		r   *dns.Msg
		err error
	}
	done := make(chan answer, 1)
	go func() { r, err := askFrom(s.addr, "tcp", from, name); done <- answer{r, err} }()
	deadline := time.Now().Add(10 * time.Second)
	for s.h.waiting.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the question never waited")
		}
		runtime.Gosched()
	}
	b.SetPod(1, &index.Pod{Tenant: "system", Namespace: "kube-system", Name: "new", IPs: ips(from)})
	b.Publish()
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	want := parseRRs(t, []string{name + " 5 IN CNAME " + kdns, kdns + " 5 IN A 10.1.0.10"})
	if got := rrStrings(t, a.r.Answer); !equal(got, want) {
		t.Errorf("once tp2 has the pod: %v, want %v", got, want)
	}
}

// A new pod's question for a system name several TPs have waits, over UDP
// (the fast path hands it to the slow path) and TCP, until the index learns
// the pod: then it gets its own TP's answer, cacheable. An address outside
// --pod-cidr, and a pod never learned (after --unknown-pod-wait), get the
// system partition's at TTL 0.
func TestUnknownPodWaitsForItsTP(t *testing.T) {
	b := fixture(t)
	met := NewMetrics(nil)
	s := startServer(t, b, Options{PodCIDRs: prefixes("127.0.0.0/25"), UnknownPodWait: 20 * time.Second, Metrics: met})
	for i, network := range []string{"udp", "tcp"} {
		from := fmt.Sprintf("127.0.0.%d", 50+i)
		type answer struct {
			r   *dns.Msg
			err error
		}
		done := make(chan answer, 1)
		go func() { r, err := askFrom(s.addr, network, from, kdns); done <- answer{r, err} }()
		// The question is waiting before the pod is published.
		deadline := time.Now().Add(10 * time.Second)
		for s.h.waiting.Load() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s from %s: the question never waited", network, from)
			}
			runtime.Gosched()
		}
		b.SetPod(1, &index.Pod{Tenant: "system", Namespace: "kube-system", Name: "new-" + network, IPs: ips(from)})
		b.Publish()
		a := <-done
		if a.err != nil {
			t.Fatalf("%s from %s: %v", network, from, a.err)
		}
		if got := rrStrings(t, a.r.Answer); len(got) != 1 || got[0] != kdns+"\t5\tIN\tA\t10.1.0.10" {
			t.Errorf("%s from %s, once tp2 has it: %v, want tp2's kube-dns at TTL 5", network, from, got)
		}
	}
	if n := testutil.ToFloat64(met.unknownPodWaits[1]); n != 2 {
		t.Errorf("learned waits: %v, want 2", n)
	}

	// Outside --pod-cidr: no wait. A pod never learned: the wait ends.
	s2 := startServer(t, b, Options{PodCIDRs: prefixes("127.0.0.0/25"), UnknownPodWait: 50 * time.Millisecond, Metrics: met})
	for _, from := range []string{"127.0.0.200", "127.0.0.60"} {
		start := time.Now()
		r := ask(t, s2.addr, "udp", from, kdns, dns.TypeA, 0)
		if got := rrStrings(t, r.Answer); len(got) != 1 || got[0] != kdns+"\t0\tIN\tA\t10.0.0.10" {
			t.Errorf("from %s: %v, want tp1's kube-dns at TTL 0", from, got)
		}
		if from == "127.0.0.60" && time.Since(start) < 50*time.Millisecond {
			t.Errorf("from %s: answered after %s, before the wait ended", from, time.Since(start))
		}
	}
	if n := testutil.ToFloat64(met.unknownPodWaits[0]); n != 1 {
		t.Errorf("waits in vain: %v, want 1 (127.0.0.60 alone)", n)
	}
}

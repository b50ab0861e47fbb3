package source_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/server"
	"github.com/tpkit-dev/tpkit/pkg/dns/source"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

func ns(tenant, name string) *corev1.Namespace {
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	tenancy.SetTenant(n, tenant)
	return n
}

func svc(tenant, namespace, name string, ips []string, ports ...corev1.ServicePort) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: ips, Ports: ports}}
	if len(ips) > 0 {
		s.Spec.ClusterIP = ips[0]
	}
	if len(ips) == 1 && ips[0] == "None" {
		s.Spec.ClusterIPs = nil
	}
	tenancy.SetTenant(s, tenant)
	return s
}

func pod(tenant, namespace, name, ip string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}}
	tenancy.SetTenant(p, tenant)
	return p
}

// endpoints are the Endpoints of a selector-less service, port mysql 3306.
func endpoints(tenant, namespace, service string, ready []corev1.EndpointAddress, notReady ...corev1.EndpointAddress) *corev1.Endpoints {
	e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: service, Namespace: namespace},
		Subsets: []corev1.EndpointSubset{{Addresses: ready, NotReadyAddresses: notReady,
			Ports: []corev1.EndpointPort{{Name: "mysql", Port: 3306, Protocol: corev1.ProtocolTCP}}}}}
	tenancy.SetTenant(e, tenant)
	return e
}

// bigEndpoints are more ready endpoints than fit a 512-byte answer.
func bigEndpoints() []corev1.EndpointAddress {
	var eps []corev1.EndpointAddress
	for i := 1; i <= 100; i++ {
		eps = append(eps, corev1.EndpointAddress{IP: fmt.Sprintf("10.245.0.%d", i)})
	}
	return eps
}

func port(name string, proto corev1.Protocol, p int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: proto, Port: p}
}

type env struct {
	cluster  *faketp.Cluster
	set      *partition.Set
	src      *source.Source
	builder  *index.Builder
	h, hIso  *server.Handler
	addr     string
	isolated string
}

// modes are the two ways a TP serves endpoints: the tests pass on both. The
// second also lists in pages of 2 objects, so that every list is paged.
var modes = []struct {
	name      string
	tps       faketp.Options
	endpoints string // what the source reads
	pageSize  int64  // source.Options.PageSize
}{
	{"endpoints", faketp.Options{}, "endpoints", 0},
	{"endpointslices-paged", faketp.Options{EndpointSlices: true}, "endpointslices", 2},
}

// start seeds three fake TPs, starts partition-dns's parts on them, and
// returns before anything has synced.
func start(t *testing.T, o faketp.Options, so source.Options) *env {
	o.Partitions = 3
	c := faketp.StartT(t, o)
	tps := c.TPs()
	for i, tp := range tps {
		objs := []any{ns("system", "kube-system"), ns("system", "default")}
		if i < 2 {
			ip := []string{"10.96.0.10", "10.97.0.10"}[i]
			objs = append(objs, svc("system", "kube-system", "kube-dns", []string{ip}, port("dns", corev1.ProtocolUDP, 53), port("dns-tcp", corev1.ProtocolTCP, 53)))
			objs = append(objs, pod("system", "kube-system", "agent", []string{"127.0.0.2", "127.0.0.3"}[i]))
		}
		if err := tp.Seed(objs...); err != nil {
			t.Fatal(err)
		}
	}
	// tp1: tenant alpha, with names that collide with the system tenant's
	// in the same TP (default/kubernetes).
	err := tps[0].Seed(
		svc("system", "default", "kubernetes", []string{"10.96.0.1"}, port("https", corev1.ProtocolTCP, 443)),
		ns("alpha", "web"), ns("alpha", "default"),
		svc("alpha", "default", "kubernetes", []string{"10.96.9.1"}, port("https", corev1.ProtocolTCP, 443)),
		svc("alpha", "web", "api", []string{"10.96.1.1", "fd00::1:1"}, port("http", corev1.ProtocolTCP, 80)),
		svc("alpha", "web", "db", []string{"None"}, port("mysql", corev1.ProtocolTCP, 3306)),
		endpoints("alpha", "web", "db", []corev1.EndpointAddress{{IP: "10.244.1.5", Hostname: "db-0"}}, corev1.EndpointAddress{IP: "10.244.1.6"}),
		func() *corev1.Service {
			s := svc("alpha", "web", "ext", nil)
			s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
			return s
		}(),
		pod("alpha", "web", "client", "127.0.0.11"),
		svc("alpha", "web", "big", []string{"None"}, port("mysql", corev1.ProtocolTCP, 3306)),
		endpoints("alpha", "web", "big", bigEndpoints()),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = tps[1].Seed(ns("beta", "web"),
		svc("beta", "web", "api", []string{"10.97.1.1"}, port("http", corev1.ProtocolTCP, 80)),
		pod("beta", "web", "client", "127.0.0.21"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var cfgs []*rest.Config
	for _, tp := range tps {
		names = append(names, tp.Name())
		cfgs = append(cfgs, tp.RESTConfig())
	}
	set, err := partition.NewFromConfigs(names, cfgs, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := index.NewBuilder(index.Options{Partitions: names})
	src, err := source.New(set.Partitions(), b, so)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cluster: c, set: set, src: src, builder: b}
	e.h, e.addr = serve(t, b, server.Options{Pods: server.PodsInsecure})
	e.hIso, e.isolated = serve(t, b, server.Options{Pods: server.PodsInsecure, Isolation: true})
	return e
}

func serve(t *testing.T, b *index.Builder, o server.Options) (*server.Handler, string) {
	o.Zones, o.TTL = []string{"cluster.local", "in-addr.arpa"}, 5
	o.NSAddrs = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	h, err := server.New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	l, err := server.Listen("127.0.0.1:0", 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = server.Serve(ctx, l, h) }()
	t.Cleanup(func() { cancel(); <-done; l.Close() })
	return h, l.Addr()
}

func (e *env) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e.set.Start(ctx)
	e.src.Start(ctx)
	go e.builder.Run(ctx, 10*time.Millisecond)
	if !e.src.WaitForSync(ctx, time.Minute) {
		t.Fatal("partitions did not sync")
	}
	// Wait for the synced state to be published.
	for e.builder.Publish() {
	}
	testbin.Eventually(t, "index has kube-dns", func() bool {
		r := ask(t, e.addr, "udp", "127.0.0.1", "kube-dns.kube-system.svc.cluster.local.", dns.TypeA)
		return len(r.Answer) == 1
	})
	e.h.MarkSynced()
	e.hIso.MarkSynced()
}

func ask(t *testing.T, addr, network, from, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Net: network, Dialer: &net.Dialer{}}
	if network == "tcp" {
		c.Dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	} else {
		c.Dialer.LocalAddr = &net.UDPAddr{IP: net.ParseIP(from)}
	}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s: %v", network, name, err)
	}
	return r
}

func answers(r *dns.Msg) []string {
	var out []string
	for _, rr := range r.Answer {
		out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
	}
	sort.Strings(out)
	return out
}

func TestEndToEnd(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { testEndToEnd(t, m.tps, m.endpoints, m.pageSize) })
	}
}

func testEndToEnd(t *testing.T, o faketp.Options, wantEndpoints string, pageSize int64) {
	e := start(t, o, source.Options{PageSize: pageSize})

	// Before the first sync, cluster names are SERVFAIL, not NXDOMAIN.
	for _, network := range []string{"udp", "tcp"} {
		if r := ask(t, e.addr, network, "127.0.0.1", "api.web.alpha.svc.cluster.local.", dns.TypeA); r.Rcode != dns.RcodeServerFailure {
			t.Fatalf("%s before sync: %s", network, dns.RcodeToString[r.Rcode])
		}
	}
	e.run(t)
	for _, st := range e.src.States() {
		if st.Endpoints != wantEndpoints {
			t.Fatalf("partition %s: endpoints read from %q, want %q", st.Name, st.Endpoints, wantEndpoints)
		}
	}

	type c struct {
		from, name string
		qtype      uint16
		rcode      int
		want       []string
	}
	cases := []c{
		{"127.0.0.1", "api.web.alpha.svc.cluster.local.", dns.TypeA, 0, []string{"10.96.1.1"}},
		{"127.0.0.1", "api.web.alpha.svc.cluster.local.", dns.TypeAAAA, 0, []string{"fd00::1:1"}},
		{"127.0.0.1", "_http._tcp.api.web.alpha.svc.cluster.local.", dns.TypeSRV, 0, []string{"0 50 80 api.web.alpha.svc.cluster.local."}}, // dual-stack: two records' worth of weight, as CoreDNS
		{"127.0.0.1", "api.web.beta.svc.cluster.local.", dns.TypeA, 0, []string{"10.97.1.1"}},
		{"127.0.0.1", "db.web.alpha.svc.cluster.local.", dns.TypeA, 0, []string{"10.244.1.5"}}, // the unready endpoint is left out
		{"127.0.0.1", "db-0.db.web.alpha.svc.cluster.local.", dns.TypeA, 0, []string{"10.244.1.5"}},
		{"127.0.0.1", "10-244-1-6.db.web.alpha.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"127.0.0.1", "_mysql._tcp.db.web.alpha.svc.cluster.local.", dns.TypeSRV, 0, []string{"0 100 3306 db-0.db.web.alpha.svc.cluster.local."}},
		{"127.0.0.1", "ext.web.alpha.svc.cluster.local.", dns.TypeCNAME, 0, []string{"example.com."}},
		{"127.0.0.1", "10-1-2-3.web.alpha.pod.cluster.local.", dns.TypeA, 0, []string{"10.1.2.3"}},
		{"127.0.0.1", "1.1.96.10.in-addr.arpa.", dns.TypePTR, 0, []string{"api.web.alpha.svc.cluster.local."}},
		{"127.0.0.1", "5.1.244.10.in-addr.arpa.", dns.TypePTR, 0, []string{"db-0.db.web.alpha.svc.cluster.local."}},
		{"127.0.0.1", "dns-version.cluster.local.", dns.TypeTXT, 0, []string{`"1.1.0"`}},
		{"127.0.0.1", "cluster.local.", dns.TypeSOA, 0, nil},
		{"127.0.0.1", "nope.web.alpha.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"127.0.0.1", "api.web.alpha.svc.cluster.local.", dns.TypeMX, 0, nil},
		{"127.0.0.1", "kube-dns.kube-system.svc.cluster.local.", dns.TypeSRV, 0, []string{"0 50 53 kube-dns.kube-system.svc.cluster.local."}},
		{"127.0.0.1", "10-1-2-3.kube-system.pod.cluster.local.", dns.TypeA, 0, []string{"10.1.2.3"}},
		{"127.0.0.1", "cluster.local.", dns.TypeNS, 0, []string{"ns.dns.cluster.local."}},
		{"127.0.0.1", "cluster.local.", dns.TypeAXFR, dns.RcodeRefused, nil},
		{"127.0.0.1", "web.alpha.svc.cluster.local.", dns.TypeA, 0, nil},
		// Same names in one TP for two tenants stay apart.
		{"127.0.0.1", "kubernetes.default.svc.cluster.local.", dns.TypeA, 0, []string{"10.96.0.1"}},
		{"127.0.0.1", "kubernetes.default.alpha.svc.cluster.local.", dns.TypeA, 0, []string{"10.96.9.1"}},
		// The same system service in tp1 and tp2, answered by source.
		{"127.0.0.2", "kube-dns.kube-system.svc.cluster.local.", dns.TypeA, 0, []string{"10.96.0.10"}},
		{"127.0.0.3", "kube-dns.kube-system.svc.cluster.local.", dns.TypeA, 0, []string{"10.97.0.10"}},
		{"127.0.0.21", "kube-dns.kube-system.svc.cluster.local.", dns.TypeA, 0, []string{"10.97.0.10"}},
		{"127.0.0.11", "kube-dns.kube-system.svc.cluster.local.", dns.TypeA, 0, []string{"10.96.0.10"}},
		{"127.0.0.99", "kube-dns.kube-system.svc.cluster.local.", dns.TypeA, 0, []string{"10.96.0.10"}},
	}
	for _, x := range cases {
		for _, network := range []string{"udp", "tcp"} {
			r := ask(t, e.addr, network, x.from, x.name, x.qtype)
			got := answers(r)
			if x.qtype == dns.TypeSOA {
				got = nil
				if len(r.Answer) != 1 {
					t.Errorf("SOA: %v", r)
				}
			}
			if r.Rcode != x.rcode || strings.Join(got, ",") != strings.Join(x.want, ",") {
				t.Errorf("%s %s %s from %s: %s %v, want %s %v", network, x.name, dns.TypeToString[x.qtype], x.from, dns.RcodeToString[r.Rcode], got, dns.RcodeToString[x.rcode], x.want)
			}
		}
	}

	// A big headless answer: truncated over UDP, whole over TCP.
	if r := ask(t, e.addr, "udp", "127.0.0.1", "big.web.alpha.svc.cluster.local.", dns.TypeA); !r.Truncated || len(r.Answer) >= 100 {
		t.Errorf("udp: truncated=%v, %d answers", r.Truncated, len(r.Answer))
	}
	if r := ask(t, e.addr, "tcp", "127.0.0.1", "big.web.alpha.svc.cluster.local.", dns.TypeA); r.Truncated || len(r.Answer) != 100 {
		t.Errorf("tcp: truncated=%v, %d answers", r.Truncated, len(r.Answer))
	}

	// Tenant isolation.
	for _, x := range []c{
		{"127.0.0.11", "api.web.alpha.svc.cluster.local.", dns.TypeA, 0, []string{"10.96.1.1"}},
		{"127.0.0.11", "api.web.beta.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"127.0.0.21", "api.web.alpha.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"127.0.0.21", "kube-dns.kube-system.svc.cluster.local.", dns.TypeA, 0, []string{"10.97.0.10"}},
		{"127.0.0.2", "api.web.beta.svc.cluster.local.", dns.TypeA, 0, []string{"10.97.1.1"}},
	} {
		r := ask(t, e.isolated, "udp", x.from, x.name, x.qtype)
		if got := answers(r); r.Rcode != x.rcode || strings.Join(got, ",") != strings.Join(x.want, ",") {
			t.Errorf("isolated %s from %s: %s %v", x.name, x.from, dns.RcodeToString[r.Rcode], got)
		}
	}

	// An object update is visible in the answers.
	ctx := tenancyk8s.WithTenant(context.Background(), "beta")
	tp2 := partitiontest.Clientset(t, e.set.Partitions()[1])
	if _, err := tp2.CoreV1().Services("web").Create(ctx, svc("beta", "web", "new", []string{"10.97.1.2"}, port("http", corev1.ProtocolTCP, 80)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "new service answered", func() bool {
		return strings.Join(answers(ask(t, e.addr, "udp", "127.0.0.1", "new.web.beta.svc.cluster.local.", dns.TypeA)), ",") == "10.97.1.2"
	})
	actx := tenancyk8s.WithTenant(context.Background(), "alpha")
	tp1 := partitiontest.Clientset(t, e.set.Partitions()[0])
	ep, err := tp1.CoreV1().Endpoints("web").Get(actx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep.Subsets[0].Addresses = append(ep.Subsets[0].Addresses, ep.Subsets[0].NotReadyAddresses...)
	ep.Subsets[0].NotReadyAddresses = nil
	if _, err := tp1.CoreV1().Endpoints("web").Update(actx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "endpoint turned ready", func() bool {
		return strings.Join(answers(ask(t, e.addr, "udp", "127.0.0.1", "db.web.alpha.svc.cluster.local.", dns.TypeA)), ",") == "10.244.1.5,10.244.1.6"
	})
	if err := tp2.CoreV1().Services("web").Delete(ctx, "new", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "deleted service gone", func() bool {
		return ask(t, e.addr, "udp", "127.0.0.1", "new.web.beta.svc.cluster.local.", dns.TypeA).Rcode == dns.RcodeNameError
	})

	// Serve-stale: tp2 goes down; its records keep being served and it
	// shows as stale, never NXDOMAIN.
	tp := e.cluster.TPs()[1]
	if err := tp.SetOutage(context.Background(), faketp.OutageRefuse); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "tp2 stale", func() bool { return e.src.States()[1].Stale })
	if err := e.src.CheckReady(); err != nil {
		t.Errorf("ready check while tp2 is stale: %v", err)
	}
	for _, network := range []string{"udp", "tcp"} {
		r := ask(t, e.addr, network, "127.0.0.1", "api.web.beta.svc.cluster.local.", dns.TypeA)
		if strings.Join(answers(r), ",") != "10.97.1.1" {
			t.Errorf("%s during outage: %v", network, r)
		}
		r = ask(t, e.addr, network, "127.0.0.3", "kube-dns.kube-system.svc.cluster.local.", dns.TypeA)
		if strings.Join(answers(r), ",") != "10.97.0.10" {
			t.Errorf("%s during outage, from tp2: %v", network, r)
		}
	}
	if err := tp.SetOutage(context.Background(), faketp.OutageNone); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "tp2 back", func() bool { return !e.src.States()[1].Stale })
	if r := ask(t, e.addr, "udp", "127.0.0.1", "api.web.beta.svc.cluster.local.", dns.TypeA); len(r.Answer) != 1 {
		t.Errorf("after outage: %v", r)
	}
}

package kubeproxyk8s_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tpkit-dev/tpkit/pkg/corelog"
	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/testbed/kubeproxyk8s"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

func service(tenant, ns, name, ip string) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolTCP}}},
	}
	tenancy.SetTenant(s, tenant)
	return s
}

// endpoints are the ready endpoints of service name (its selector-less
// Endpoints, which no controller touches), on port dns 5353.
func endpoints(tenant, ns, name string, ips ...string) *corev1.Endpoints {
	e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if len(ips) > 0 {
		ss := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: "dns", Port: 5353, Protocol: corev1.ProtocolTCP}}}
		for _, ip := range ips {
			ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: ip})
		}
		e.Subsets = []corev1.EndpointSubset{ss}
	}
	tenancy.SetTenant(e, tenant)
	return e
}

// setEndpoints replaces the ready addresses of a service's Endpoints in tp.
func setEndpoints(t *testing.T, p *partition.Partition, tenant, ns, name string, ips ...string) {
	t.Helper()
	ctx := context.Background()
	if !tenancy.IsSystem(tenant) {
		ctx = tenancyk8s.WithTenant(ctx, tenant)
	}
	cur, err := partitiontest.Clientset(t, p).CoreV1().Endpoints(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Subsets = endpoints(tenant, ns, name, ips...).Subsets
	if _, err := partitiontest.Clientset(t, p).CoreV1().Endpoints(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// modes are the two ways a TP serves endpoints; the tests pass on both.
var modes = []struct {
	name string
	tps  faketp.Options
}{
	{"endpoints", faketp.Options{}},
	{"endpointslices", faketp.Options{EndpointSlices: true}},
}

// recorder is a second handler: it checks that every event is tagged with
// the TP the object came from, and counts the Synced calls. Endpoints
// records are recorded under their service's name, so the events read the
// same in both modes.
type recorder struct {
	names     kubeproxy.Partitions
	mu        sync.Mutex
	events    []string // "<op> <tp name> <tenant>/<ns>/<service> <clusterIP or endpoints>"
	svcSynced []int
	epSynced  []int
}

func (r *recorder) add(op string, tp int, tenant, ns, name, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %s/%s/%s %s", op, r.names.Name(tp), tenant, ns, name, what))
}

func firstIP(s *kubeproxy.Service) string {
	if len(s.ClusterIPs) == 0 {
		return ""
	}
	return s.ClusterIPs[0]
}

func (r *recorder) OnServiceAdd(s *kubeproxy.Service, tp int) {
	r.add("add", tp, s.Tenant, s.Namespace, s.Name, firstIP(s))
}
func (r *recorder) OnServiceUpdate(_, s *kubeproxy.Service, tp int) {
	r.add("update", tp, s.Tenant, s.Namespace, s.Name, firstIP(s))
}
func (r *recorder) OnServiceDelete(s *kubeproxy.Service, tp int) {
	r.add("delete", tp, s.Tenant, s.Namespace, s.Name, firstIP(s))
}
func (r *recorder) OnServiceSynced(tp int) {
	r.mu.Lock()
	r.svcSynced = append(r.svcSynced, tp)
	r.mu.Unlock()
}
func (r *recorder) OnEndpointsAdd(e *kubeproxy.Endpoints, tp int) {
	r.add("add-ep", tp, e.Tenant, e.Namespace, e.Service, readyAddrs(e))
}
func (r *recorder) OnEndpointsUpdate(_, e *kubeproxy.Endpoints, tp int) {
	r.add("update-ep", tp, e.Tenant, e.Namespace, e.Service, readyAddrs(e))
}
func (r *recorder) OnEndpointsDelete(e *kubeproxy.Endpoints, tp int) {
	r.add("delete-ep", tp, e.Tenant, e.Namespace, e.Service, readyAddrs(e))
}
func (r *recorder) OnEndpointsSynced(tp int) {
	r.mu.Lock()
	r.epSynced = append(r.epSynced, tp)
	r.mu.Unlock()
}

// snapshot returns the events and the TPs each Synced call named.
func (r *recorder) snapshot() ([]string, []int, []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	svc, ep := slices.Clone(r.svcSynced), slices.Clone(r.epSynced)
	slices.Sort(svc)
	slices.Sort(ep)
	return slices.Clone(r.events), svc, ep
}

func readyAddrs(e *kubeproxy.Endpoints) string {
	var out []string
	for _, ep := range e.Endpoints {
		if ep.Ready {
			out = append(out, ep.Address)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

type env struct {
	cluster *faketp.Cluster
	set     *partition.Set
	view    *kubeproxy.View
	src     *kubeproxyk8s.Source
	names   kubeproxy.Partitions
	rec     *recorder
	cancel  context.CancelFunc
}

// start seeds two fake TPs with the same system service kube-system/kube-dns
// (own cluster IP, own endpoints) and tp1 with tenant t1's service. When
// tp2Down is set, tp2 is refusing connections while the view starts.
func start(t *testing.T, o faketp.Options, tp2Down bool, so kubeproxyk8s.SourceOptions) *env {
	t.Helper()
	o.Partitions = 2
	c := faketp.StartT(t, o)
	tps := c.TPs()
	if err := tps[0].Seed(
		service("system", "kube-system", "kube-dns", "10.96.0.10"),
		endpoints("system", "kube-system", "kube-dns", "10.244.1.1", "10.244.1.2"),
		service("t1", "web", "api", "10.96.5.5"),
		endpoints("t1", "web", "api", "10.244.1.50"),
	); err != nil {
		t.Fatal(err)
	}
	if err := tps[1].Seed(
		service("system", "kube-system", "kube-dns", "10.97.0.10"),
		endpoints("system", "kube-system", "kube-dns", "10.244.2.1"),
	); err != nil {
		t.Fatal(err)
	}
	if tp2Down {
		if err := tps[1].SetOutage(context.Background(), faketp.OutageRefuse); err != nil {
			t.Fatal(err)
		}
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
	ids := kubeproxyk8s.PartitionsOf(set)
	e := &env{cluster: c, set: set, names: ids, view: kubeproxy.NewView(ids.IDs(), kubeproxy.Options{Logger: corelog.Funcs{Warning: klog.Warningf}}), rec: &recorder{names: ids}}
	e.src, err = kubeproxyk8s.NewSource(set, []kubeproxy.ServiceHandler{e.view, e.rec}, []kubeproxy.EndpointsHandler{e.view, e.rec}, so)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	t.Cleanup(cancel)
	set.Start(ctx)
	go e.src.Run(ctx)
	return e
}

// portName is the name of port dns of service tenant/ns/name in TP tp (by
// the fake TPs' names: tp1 is tenantPartitionId 0).
func portName(tp, tenant, ns, name string) kubeproxy.ServicePortName {
	id, ok := kubeproxy.Partitions{"tp1", "tp2"}.ID(tp)
	if !ok {
		panic("no TP " + tp)
	}
	return kubeproxy.ServicePortName{ServiceName: kubeproxy.ServiceName{TenantPartitionID: id, Tenant: tenant, Namespace: ns, Name: name}, Port: "dns"}
}

func dnsName(tp string) kubeproxy.ServicePortName {
	return portName(tp, "system", "kube-system", "kube-dns")
}

func eps(s *kubeproxy.Snapshot, n kubeproxy.ServicePortName) string {
	var out []string
	for _, e := range s.Endpoints(n) {
		out = append(out, e.AddrPort().String())
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// eachMode runs test once per endpoints mode.
func eachMode(t *testing.T, test func(t *testing.T, o faketp.Options)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { test(t, m.tps) })
	}
}

func TestFakeTPSameSystemServiceInTwoTPs(t *testing.T) { eachMode(t, testSameSystemServiceInTwoTPs) }

func testSameSystemServiceInTwoTPs(t *testing.T, o faketp.Options) {
	e := start(t, o, false, kubeproxyk8s.SourceOptions{PageSize: -1}) // whole lists
	testbin.Eventually(t, "view synced", e.view.Synced)
	s := e.view.Snapshot()
	if s.Services() != 5 {
		t.Fatalf("snapshot has %d services, want 5 (kube-dns and the master service kubernetes in tp1 and tp2, t1's api)", s.Services())
	}
	for tp, ip := range map[string]string{"tp1": "10.96.0.1", "tp2": "10.97.0.1"} {
		n := kubeproxy.ServicePortName{ServiceName: portName(tp, "system", "default", "kubernetes").ServiceName, Port: "https"}
		if p, _ := s.Port(n); p == nil || p.ClusterIPs[0].String() != ip || len(s.Endpoints(n)) != 1 {
			t.Errorf("%s: %+v, endpoints %v; want cluster IP %s and the TP's address", n, p, s.Endpoints(n), ip)
		}
	}
	for tp, want := range map[string]string{"tp1": "10.244.1.1:5353,10.244.1.2:5353", "tp2": "10.244.2.1:5353"} {
		n := dnsName(tp)
		if got := eps(s, n); got != want {
			t.Errorf("%s endpoints %q, want %q", n, got, want)
		}
		if p, _ := s.Port(n); p == nil || p.ClusterIPs[0].String() != map[string]string{"tp1": "10.96.0.10", "tp2": "10.97.0.10"}[tp] {
			t.Errorf("%s: cluster IP %+v", n, p)
		}
	}
	if n := dnsName("tp1").String(); n != "system_0/kube-system/kube-dns:dns" {
		t.Errorf("name %q", n)
	}
	events, _, _ := e.rec.snapshot()
	for _, want := range []string{
		"add tp1 system/kube-system/kube-dns 10.96.0.10", "add tp2 system/kube-system/kube-dns 10.97.0.10",
		"add-ep tp1 system/kube-system/kube-dns 10.244.1.1,10.244.1.2", "add-ep tp2 system/kube-system/kube-dns 10.244.2.1",
		"add tp1 t1/web/api 10.96.5.5", "add-ep tp1 t1/web/api 10.244.1.50",
	} {
		if !slices.Contains(events, want) {
			t.Errorf("no event %q in %v", want, events)
		}
	}
}

func TestFakeTPUpdatesDeletesAndOutage(t *testing.T) { eachMode(t, testUpdatesDeletesAndOutage) }

func testUpdatesDeletesAndOutage(t *testing.T, o faketp.Options) {
	e := start(t, o, false, kubeproxyk8s.SourceOptions{})
	testbin.Eventually(t, "view synced", e.view.Synced)
	tps := e.set.Partitions()
	ctx := context.Background()
	snap := kubeproxy.NewSnapshot()
	e.view.Apply(snap)

	// Update tp2's endpoints: only tp2's kube-dns changes.
	setEndpoints(t, tps[1], "system", "kube-system", "kube-dns", "10.244.2.1", "10.244.2.2")
	var changed []kubeproxy.ServiceName
	testbin.Eventually(t, "tp2 update", func() bool {
		changed = append(changed, e.view.Apply(snap).Services...)
		return eps(snap, dnsName("tp2")) == "10.244.2.1:5353,10.244.2.2:5353"
	})
	if len(changed) != 1 || changed[0] != dnsName("tp2").ServiceName {
		t.Fatalf("changed %v, want only tp2's kube-dns", changed)
	}
	if got := eps(snap, dnsName("tp1")); got != "10.244.1.1:5353,10.244.1.2:5353" {
		t.Fatalf("tp1's kube-dns changed: %s", got)
	}

	// Delete tp1's kube-dns: tp2's stays.
	if err := partitiontest.Clientset(t, tps[0]).CoreV1().Services("kube-system").Delete(ctx, "kube-dns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "tp1 delete", func() bool { e.view.Apply(snap); _, ok := snap.Port(dnsName("tp1")); return !ok })
	if _, ok := snap.Port(dnsName("tp2")); !ok {
		t.Fatal("deleting tp1's kube-dns deleted tp2's")
	}

	// tp2 goes down: its services stay, tp1 keeps flowing.
	tp2 := e.cluster.TP("tp2")
	if err := tp2.SetOutage(ctx, faketp.OutageRefuse); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "tp2 unreachable", func() bool { return !e.set.Statuses()[1].Reachable })
	actx := tenancyk8s.WithTenant(ctx, "t1")
	if err := partitiontest.Clientset(t, tps[0]).CoreV1().Services("web").Delete(actx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	api := portName("tp1", "t1", "web", "api")
	testbin.Eventually(t, "tp1 event during tp2's outage", func() bool { e.view.Apply(snap); _, ok := snap.Port(api); return !ok })
	if got := eps(snap, dnsName("tp2")); got != "10.244.2.1:5353,10.244.2.2:5353" {
		t.Fatalf("tp2's kube-dns during its outage: %q", got)
	}
	if full := e.view.Snapshot(); full.Services() != 3 {
		t.Fatalf("view during tp2's outage has %d services, want tp2's kube-dns and both TPs' kubernetes", full.Services())
	}

	// tp2 comes back with a change made meanwhile (seeded while down is not
	// possible; change it once it is back): the view follows.
	if err := tp2.SetOutage(ctx, faketp.OutageNone); err != nil {
		t.Fatal(err)
	}
	if err := partitiontest.Clientset(t, tps[1]).CoreV1().Endpoints("kube-system").Delete(ctx, "kube-dns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "tp2 back", func() bool { e.view.Apply(snap); return eps(snap, dnsName("tp2")) == "" })
	if _, ok := snap.Port(dnsName("tp2")); !ok {
		t.Fatal("tp2's kube-dns should stay, without endpoints")
	}

	// tp2 is removed from the configuration: its services go.
	if err := e.src.RemovePartition("tp2"); err != nil {
		t.Fatal(err)
	}
	e.view.Apply(snap)
	if snap.Len() != 1 {
		t.Fatalf("after removing tp2 the snapshot has %d ports, want tp1's kubernetes alone", snap.Len())
	}
	events, _, _ := e.rec.snapshot()
	if !slices.Contains(events, "delete tp2 system/kube-system/kube-dns 10.97.0.10") {
		t.Fatalf("handlers were not told tp2's service went: %v", events)
	}
	if err := e.src.RemovePartition("nope"); err == nil {
		t.Fatal("removing an unknown TP should fail")
	}
}

// TestFakeTPChangesDuringOutage (lists in pages of one object): while tp2
// is down its last state is kept; what changed there meanwhile (a service
// deleted, a slice changed, and the watch history compacted, so the
// informer must relist and deliver the delete as a tombstone) arrives when
// it is back.
func TestFakeTPChangesDuringOutage(t *testing.T) { eachMode(t, testChangesDuringOutage) }

func testChangesDuringOutage(t *testing.T, o faketp.Options) {
	// Pages of one object: the relist after the outage stages them one by
	// one, and what it lacks is a delete only once the last has come.
	e := start(t, o, false, kubeproxyk8s.SourceOptions{PageSize: 1})
	testbin.Eventually(t, "view synced", e.view.Synced)
	tp2 := e.cluster.TP("tp2")
	ctx := context.Background()
	if err := tp2.SetOutage(ctx, faketp.OutageRefuse); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "tp2 unreachable", func() bool { return !e.set.Statuses()[1].Reachable })
	k := store.Key{Resource: "services", Tenant: "system", Namespace: "kube-system", Name: "kube-dns"}
	old, ok := tp2.Store().Get(k)
	if !ok {
		t.Fatal("tp2 has no kube-dns in its store")
	}
	if _, err := tp2.Store().Delete(k, 0, func(uint64) ([]byte, error) { return old.Data, nil }); err != nil {
		t.Fatal(err)
	}
	if err := tp2.Seed(service("system", "default", "late", "10.97.0.99")); err != nil {
		t.Fatal(err)
	}
	tp2.Compact()
	if got := eps(e.view.Snapshot(), dnsName("tp2")); got != "10.244.2.1:5353" {
		t.Fatalf("tp2's kube-dns during the outage: %q, want its last state", got)
	}
	if err := tp2.SetOutage(ctx, faketp.OutageNone); err != nil {
		t.Fatal(err)
	}
	late := portName("tp2", "system", "default", "late")
	testbin.Eventually(t, "tp2's changes after the outage", func() bool {
		s := e.view.Snapshot()
		_, dnsThere := s.Port(dnsName("tp2"))
		_, lateThere := s.Port(late)
		return !dnsThere && lateThere
	})
	if got := eps(e.view.Snapshot(), dnsName("tp1")); got != "10.244.1.1:5353,10.244.1.2:5353" {
		t.Fatalf("tp1's kube-dns after tp2's outage: %q", got)
	}
	events, _, _ := e.rec.snapshot()
	if !slices.Contains(events, "delete tp2 system/kube-system/kube-dns 10.97.0.10") {
		t.Fatalf("the delete missed during the outage never reached the handlers: %v", events)
	}
}

// TestFakeTPSyncedOnlyAfterAllTPs starts with tp2 down: tp1's services
// arrive, but Synced waits for tp2.
func TestFakeTPSyncedOnlyAfterAllTPs(t *testing.T) {
	e := start(t, faketp.Options{}, true, kubeproxyk8s.SourceOptions{})
	testbin.Eventually(t, "tp1 synced", func() bool { p, _ := e.set.Get("tp1"); return p.Synced() })
	testbin.Eventually(t, "tp1's services in the view", func() bool {
		_, ok := e.view.Snapshot().Port(dnsName("tp1"))
		return ok
	})
	// tp1 (id 0) reports synced on its own; the view waits for tp2.
	testbin.Eventually(t, "tp1's Synced calls", func() bool { _, s, es := e.rec.snapshot(); return len(s) == 1 && len(es) == 1 })
	if e.view.Synced() {
		t.Fatal("view synced while tp2 is down")
	}
	if _, s, es := e.rec.snapshot(); !slices.Equal(s, []int{0}) || !slices.Equal(es, []int{0}) {
		t.Fatalf("Synced calls for TPs %v/%v while tp2 is down, want only tp1's (0)", s, es)
	}
	select {
	case <-e.src.Synced():
		t.Fatal("source synced while tp2 is down")
	default:
	}
	if err := e.cluster.TP("tp2").SetOutage(context.Background(), faketp.OutageNone); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "view synced", e.view.Synced)
	<-e.src.Synced()
	if _, s, es := e.rec.snapshot(); !slices.Equal(s, []int{0, 1}) || !slices.Equal(es, []int{0, 1}) {
		t.Fatalf("Synced calls for TPs %v/%v, want once per TP", s, es)
	}
	if m := e.src.Missing(); m != nil {
		t.Fatalf("missing %v without a timeout", m)
	}
	if got := eps(e.view.Snapshot(), dnsName("tp2")); got != "10.244.2.1:5353" {
		t.Fatalf("tp2's kube-dns after sync: %q", got)
	}
}

// TestFakeTPSyncTimeout starts with tp2 down and a sync timeout: when it
// passes, the Synced calls fire with tp1's state and the source names tp2
// as missing; tp2's objects follow when it comes up.
func TestFakeTPSyncTimeout(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	e := start(t, faketp.Options{}, true, kubeproxyk8s.SourceOptions{SyncTimeout: time.Minute, Clock: clk})
	// tp1's services and endpoints have both listed.
	testbin.Eventually(t, "tp1 synced", func() bool { p, _ := e.set.Get("tp1"); return p.Synced() })
	testbin.Eventually(t, "the source to wait on its clock", clk.HasWaiters)
	if e.view.Synced() {
		t.Fatal("view synced before the timeout")
	}
	clk.Step(time.Minute)
	<-e.src.Synced()
	if !e.view.Synced() || !slices.Equal(e.src.Missing(), []string{"tp2"}) {
		t.Fatalf("after the timeout: view synced %v, missing %v; want synced, missing [tp2]", e.view.Synced(), e.src.Missing())
	}
	if _, s, es := e.rec.snapshot(); !slices.Equal(s, []int{0, 1}) || !slices.Equal(es, []int{0, 1}) {
		t.Fatalf("Synced calls for TPs %v/%v, want once per TP", s, es)
	}
	if err := e.cluster.TP("tp2").SetOutage(context.Background(), faketp.OutageNone); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "tp2's kube-dns after it came up", func() bool {
		return eps(e.view.Snapshot(), dnsName("tp2")) == "10.244.2.1:5353"
	})
	testbin.Eventually(t, "tp2 listed", func() bool { p, _ := e.set.Get("tp2"); return p.Synced() })
	if _, s, es := e.rec.snapshot(); len(s) != 2 || len(es) != 2 {
		t.Fatalf("tp2's late list made Synced calls again: %v/%v", s, es)
	}
}

// BenchmarkFakeTPSyncedToFirstSnapshot runs real informers against 3 fake
// TPs with 10k services × 3 endpoints each. Each iteration starts a new
// partition set, view and source and takes its first complete snapshot:
// ns/op is the whole run, "sync-ms" the part until every TP synced and every
// handler got the initial objects, "snapshot-ms" the rest (synced to first
// complete snapshot).
func BenchmarkFakeTPSyncedToFirstSnapshot(b *testing.B) {
	const perTP = 10000
	c := faketp.StartT(b, faketp.Options{Partitions: 3, Plugins: []faketp.Plugin{}})
	var names []string
	var cfgs []*rest.Config
	for ti, tp := range c.TPs() {
		objs := make([]any, 0, 2*perTP)
		for i := 0; i < perTP; i++ {
			ns, n := fmt.Sprintf("ns%d", i%100), fmt.Sprintf("svc%d", i)
			objs = append(objs, service("system", ns, n, fmt.Sprintf("10.%d.%d.%d", 96+ti, i>>8&255, i&255)))
			var ips []string
			for j := 0; j < 3; j++ {
				ips = append(ips, fmt.Sprintf("172.%d.%d.%d", 16+ti, (i*3+j)>>8&255, (i*3+j)&255))
			}
			objs = append(objs, endpoints("system", ns, n, ips...))
		}
		if err := tp.Seed(objs...); err != nil {
			b.Fatal(err)
		}
		names = append(names, tp.Name())
		cfgs = append(cfgs, tp.RESTConfig())
	}
	var syncTotal, snapTotal time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		set, err := partition.NewFromConfigs(names, cfgs, partition.Options{QPS: 1000, Burst: 1000})
		if err != nil {
			b.Fatal(err)
		}
		v := kubeproxy.NewView(kubeproxyk8s.PartitionsOf(set).IDs(), kubeproxy.Options{})
		src, err := kubeproxyk8s.NewSource(set, []kubeproxy.ServiceHandler{v}, []kubeproxy.EndpointsHandler{v}, kubeproxyk8s.SourceOptions{})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		set.Start(ctx)
		go src.Run(ctx)
		<-src.Synced()
		synced := time.Now()
		s := kubeproxy.NewSnapshot()
		v.Apply(s)
		syncTotal += synced.Sub(start)
		snapTotal += time.Since(synced)
		cancel()
		if s.Len() != 3*perTP {
			b.Fatalf("snapshot has %d ports", s.Len())
		}
	}
	b.ReportMetric(float64(syncTotal.Milliseconds())/float64(b.N), "sync-ms")
	b.ReportMetric(float64(snapTotal.Microseconds())/1000/float64(b.N), "snapshot-ms")
}

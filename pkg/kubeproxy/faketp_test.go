package kubeproxy_test

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
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/tpkit-dev/tpkit/pkg/faketp"
	"github.com/tpkit-dev/tpkit/pkg/faketp/store"
	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

func ptr[T any](v T) *T { return &v }

func service(tenant, ns, name, ip string) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolTCP}}},
	}
	tenancy.SetTenant(s, tenant)
	return s
}

func endpointSlice(tenant, ns, name, svc string, ips ...string) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("dns"), Port: ptr(int32(5353)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}})
	}
	tenancy.SetTenant(es, tenant)
	return es
}

// recorder is a second handler: it checks that every event is tagged with
// the TP the object came from, and counts the Synced calls.
type recorder struct {
	mu          sync.Mutex
	events      []string // "<op> <tp> <tenant>/<ns>/<name> <clusterIP or endpoints>"
	svcSynced   int
	sliceSynced int
}

func (r *recorder) add(op, tp string, obj metav1.Object, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %s/%s/%s %s", op, tp, tenancy.TenantOf(obj), obj.GetNamespace(), obj.GetName(), what))
}

func (r *recorder) OnServiceAdd(tp string, s *corev1.Service) { r.add("add", tp, s, s.Spec.ClusterIP) }
func (r *recorder) OnServiceUpdate(tp string, _, s *corev1.Service) {
	r.add("update", tp, s, s.Spec.ClusterIP)
}
func (r *recorder) OnServiceDelete(tp string, s *corev1.Service) {
	r.add("delete", tp, s, s.Spec.ClusterIP)
}
func (r *recorder) OnServiceSynced() {
	r.mu.Lock()
	r.svcSynced++
	r.mu.Unlock()
}
func (r *recorder) OnEndpointSliceAdd(tp string, s *discoveryv1.EndpointSlice) {
	r.add("add", tp, s, addrs(s))
}
func (r *recorder) OnEndpointSliceUpdate(tp string, _, s *discoveryv1.EndpointSlice) {
	r.add("update", tp, s, addrs(s))
}
func (r *recorder) OnEndpointSliceDelete(tp string, s *discoveryv1.EndpointSlice) {
	r.add("delete", tp, s, addrs(s))
}
func (r *recorder) OnEndpointSlicesSynced() {
	r.mu.Lock()
	r.sliceSynced++
	r.mu.Unlock()
}

func (r *recorder) snapshot() ([]string, int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events), r.svcSynced, r.sliceSynced
}

func addrs(s *discoveryv1.EndpointSlice) string {
	var out []string
	for _, e := range s.Endpoints {
		out = append(out, e.Addresses...)
	}
	return strings.Join(out, ",")
}

type env struct {
	cluster *faketp.Cluster
	set     *partition.Set
	view    *kubeproxy.View
	src     *kubeproxy.Source
	rec     *recorder
	cancel  context.CancelFunc
}

// start seeds two fake TPs with the same system service kube-system/kube-dns
// (own cluster IP, own endpoints) and tp1 with tenant t1's service. When
// tp2Down is set, tp2 is refusing connections while the view starts.
func start(t *testing.T, tp2Down bool) *env {
	t.Helper()
	c := faketp.StartT(t, faketp.Options{Partitions: 2})
	tps := c.TPs()
	if err := tps[0].Seed(
		service("system", "kube-system", "kube-dns", "10.96.0.10"),
		endpointSlice("system", "kube-system", "kube-dns-1", "kube-dns", "10.244.1.1", "10.244.1.2"),
		service("t1", "web", "api", "10.96.5.5"),
		endpointSlice("t1", "web", "api-1", "api", "10.244.1.50"),
	); err != nil {
		t.Fatal(err)
	}
	if err := tps[1].Seed(
		service("system", "kube-system", "kube-dns", "10.97.0.10"),
		endpointSlice("system", "kube-system", "kube-dns-1", "kube-dns", "10.244.2.1"),
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
	e := &env{cluster: c, set: set, view: kubeproxy.NewView(names, kubeproxy.Options{}), rec: &recorder{}}
	e.src, err = kubeproxy.NewSource(set, []kubeproxy.ServiceHandler{e.view, e.rec}, []kubeproxy.EndpointSliceHandler{e.view, e.rec})
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

// waitFor polls cond; the deadline only guards against a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func dnsName(tp string) kubeproxy.ServicePortName {
	return kubeproxy.ServicePortName{Service: tenancy.Key{Partition: tp, Tenant: "system", Namespace: "kube-system", Name: "kube-dns"}, Port: "dns", Protocol: corev1.ProtocolTCP}
}

func eps(s *kubeproxy.Snapshot, n kubeproxy.ServicePortName) string {
	var out []string
	for _, e := range s.Endpoints(n) {
		out = append(out, e.AddrPort().String())
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestFakeTPSameSystemServiceInTwoTPs(t *testing.T) {
	e := start(t, false)
	waitFor(t, "view synced", e.view.Synced)
	s := e.view.Snapshot()
	if s.Services() != 3 {
		t.Fatalf("snapshot has %d services, want 3 (kube-dns in tp1 and tp2, t1's api)", s.Services())
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
	if n := dnsName("tp1").String(); n != "system_tp1/kube-system/kube-dns:dns" {
		t.Errorf("name %q", n)
	}
	events, _, _ := e.rec.snapshot()
	for _, want := range []string{
		"add tp1 system/kube-system/kube-dns 10.96.0.10", "add tp2 system/kube-system/kube-dns 10.97.0.10",
		"add tp1 system/kube-system/kube-dns-1 10.244.1.1,10.244.1.2", "add tp2 system/kube-system/kube-dns-1 10.244.2.1",
		"add tp1 t1/web/api 10.96.5.5",
	} {
		if !slices.Contains(events, want) {
			t.Errorf("no event %q in %v", want, events)
		}
	}
}

func TestFakeTPUpdatesDeletesAndOutage(t *testing.T) {
	e := start(t, false)
	waitFor(t, "view synced", e.view.Synced)
	tps := e.set.Partitions()
	ctx := context.Background()
	snap := kubeproxy.NewSnapshot()
	e.view.Apply(snap)

	// Update tp2's slice: only tp2's kube-dns changes.
	sl, err := tps[1].Client.DiscoveryV1().EndpointSlices("kube-system").Get(ctx, "kube-dns-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.244.2.2"}})
	if _, err := tps[1].Client.DiscoveryV1().EndpointSlices("kube-system").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var changed []tenancy.Key
	waitFor(t, "tp2 update", func() bool {
		changed = append(changed, e.view.Apply(snap).Services...)
		return eps(snap, dnsName("tp2")) == "10.244.2.1:5353,10.244.2.2:5353"
	})
	if len(changed) != 1 || changed[0].Partition != "tp2" {
		t.Fatalf("changed %v, want only tp2's kube-dns", changed)
	}
	if got := eps(snap, dnsName("tp1")); got != "10.244.1.1:5353,10.244.1.2:5353" {
		t.Fatalf("tp1's kube-dns changed: %s", got)
	}

	// Delete tp1's kube-dns: tp2's stays.
	if err := tps[0].Client.CoreV1().Services("kube-system").Delete(ctx, "kube-dns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tp1 delete", func() bool { e.view.Apply(snap); _, ok := snap.Port(dnsName("tp1")); return !ok })
	if _, ok := snap.Port(dnsName("tp2")); !ok {
		t.Fatal("deleting tp1's kube-dns deleted tp2's")
	}

	// tp2 goes down: its services stay, tp1 keeps flowing.
	tp2 := e.cluster.TP("tp2")
	if err := tp2.SetOutage(ctx, faketp.OutageRefuse); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tp2 unreachable", func() bool { return !e.set.Statuses()[1].Reachable })
	actx := tenancy.WithTenant(ctx, "t1")
	if err := tps[0].Client.CoreV1().Services("web").Delete(actx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	api := kubeproxy.ServicePortName{Service: tenancy.Key{Partition: "tp1", Tenant: "t1", Namespace: "web", Name: "api"}, Port: "dns", Protocol: corev1.ProtocolTCP}
	waitFor(t, "tp1 event during tp2's outage", func() bool { e.view.Apply(snap); _, ok := snap.Port(api); return !ok })
	if got := eps(snap, dnsName("tp2")); got != "10.244.2.1:5353,10.244.2.2:5353" {
		t.Fatalf("tp2's kube-dns during its outage: %q", got)
	}
	if full := e.view.Snapshot(); full.Services() != 1 {
		t.Fatalf("view during tp2's outage has %d services, want tp2's kube-dns", full.Services())
	}

	// tp2 comes back with a change made meanwhile (seeded while down is not
	// possible; change it once it is back): the view follows.
	if err := tp2.SetOutage(ctx, faketp.OutageNone); err != nil {
		t.Fatal(err)
	}
	if err := tps[1].Client.DiscoveryV1().EndpointSlices("kube-system").Delete(ctx, "kube-dns-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tp2 back", func() bool { e.view.Apply(snap); return eps(snap, dnsName("tp2")) == "" })
	if _, ok := snap.Port(dnsName("tp2")); !ok {
		t.Fatal("tp2's kube-dns should stay, without endpoints")
	}

	// tp2 is removed from the configuration: its services go.
	if err := e.src.RemovePartition("tp2"); err != nil {
		t.Fatal(err)
	}
	e.view.Apply(snap)
	if snap.Len() != 0 {
		t.Fatalf("after removing tp2 the snapshot still has %d ports", snap.Len())
	}
	events, _, _ := e.rec.snapshot()
	if !slices.Contains(events, "delete tp2 system/kube-system/kube-dns 10.97.0.10") {
		t.Fatalf("handlers were not told tp2's service went: %v", events)
	}
	if err := e.src.RemovePartition("nope"); err == nil {
		t.Fatal("removing an unknown TP should fail")
	}
}

// TestFakeTPChangesDuringOutage: while tp2 is down its last state is kept;
// what changed there meanwhile (a service deleted, a slice changed, and the
// watch history compacted, so the informer must relist and deliver the
// delete as a tombstone) arrives when it is back.
func TestFakeTPChangesDuringOutage(t *testing.T) {
	e := start(t, false)
	waitFor(t, "view synced", e.view.Synced)
	tp2 := e.cluster.TP("tp2")
	ctx := context.Background()
	if err := tp2.SetOutage(ctx, faketp.OutageRefuse); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tp2 unreachable", func() bool { return !e.set.Statuses()[1].Reachable })
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
	late := kubeproxy.ServicePortName{Service: tenancy.Key{Partition: "tp2", Tenant: "system", Namespace: "default", Name: "late"}, Port: "dns", Protocol: corev1.ProtocolTCP}
	waitFor(t, "tp2's changes after the outage", func() bool {
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
	e := start(t, true)
	waitFor(t, "tp1 synced", func() bool { p, _ := e.set.Get("tp1"); return p.Synced() })
	waitFor(t, "tp1's services in the view", func() bool {
		_, ok := e.view.Snapshot().Port(dnsName("tp1"))
		return ok
	})
	if e.view.Synced() {
		t.Fatal("view synced while tp2 is down")
	}
	if _, s, es := e.rec.snapshot(); s != 0 || es != 0 {
		t.Fatalf("Synced fired %d/%d times while tp2 is down", s, es)
	}
	select {
	case <-e.src.Synced():
		t.Fatal("source synced while tp2 is down")
	default:
	}
	if err := e.cluster.TP("tp2").SetOutage(context.Background(), faketp.OutageNone); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "view synced", e.view.Synced)
	<-e.src.Synced()
	if _, s, es := e.rec.snapshot(); s != 1 || es != 1 {
		t.Fatalf("Synced fired %d/%d times, want once each", s, es)
	}
	if got := eps(e.view.Snapshot(), dnsName("tp2")); got != "10.244.2.1:5353" {
		t.Fatalf("tp2's kube-dns after sync: %q", got)
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
			objs = append(objs, endpointSlice("system", ns, n+"-x", n, ips...))
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
		v := kubeproxy.NewView(names, kubeproxy.Options{})
		src, err := kubeproxy.NewSource(set, []kubeproxy.ServiceHandler{v}, []kubeproxy.EndpointSliceHandler{v})
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

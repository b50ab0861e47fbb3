package index

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

var a = netip.MustParseAddr

func svc(tenant, ns, name, ip string) *Service {
	return &Service{Tenant: tenant, Namespace: ns, Name: name, ClusterIPs: []netip.Addr{a(ip)}, Ports: []Port{{Port: NoPort}}}
}

func TestPublishIsCopyOnWrite(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1", "tp2"}})
	b.SetNamespace(0, "system", "default", true)
	b.SetService(0, svc("system", "default", "web", "10.0.0.1"))
	if !b.Publish() || b.Publish() {
		t.Fatal("Publish reports changes wrongly")
	}
	s1 := b.Current()
	web1 := s1.Namespace(0, []byte("system"), []byte("default")).Service("web")
	b.SetService(0, svc("system", "default", "web", "10.0.0.2"))
	b.SetService(0, svc("system", "default", "api", "10.0.0.3"))
	b.Publish()
	s2 := b.Current()
	// The old snapshot is untouched.
	if got := s1.Namespace(0, []byte("system"), []byte("default")); got.ServiceCount() != 1 || got.Service("web") != web1 || web1.ClusterIPs()[0] != a("10.0.0.1") {
		t.Fatalf("old snapshot changed: %v", slices.Collect(got.Services()))
	}
	if len(s1.PTRs(a("10.0.0.2"), nil)) != 0 || len(s1.PTRs(a("10.0.0.1"), nil)) != 1 {
		t.Fatal("old snapshot's reverse map changed")
	}
	if got := s2.Namespace(0, []byte("system"), []byte("default")); got.ServiceCount() != 2 || got.Service("web").ClusterIPs()[0] != a("10.0.0.2") {
		t.Fatalf("new snapshot: %v", got)
	}
	if len(s2.PTRs(a("10.0.0.1"), nil)) != 0 || len(s2.PTRs(a("10.0.0.2"), nil)) != 1 {
		t.Fatal("new snapshot's reverse map is wrong")
	}
	// Untouched partitions are shared, not copied.
	if s1.TPs[1] != s2.TPs[1] {
		t.Fatal("unchanged partition view was copied")
	}
}

func TestDeletesAndEmptyNamespaces(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1"}})
	b.SetService(0, svc("acme", "web", "api", "10.0.1.1"))
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "p", IPs: []netip.Addr{a("127.0.0.11")}})
	b.Publish()
	s := b.Current()
	if !s.Namespace(0, []byte("acme"), []byte("web")).Exists() {
		t.Fatal("namespace with a service does not exist")
	}
	if src, ok := s.Source(a("127.0.0.11")); !ok || src.Tenant != "acme" || src.TP != 0 {
		t.Fatalf("source: %v %v", src, ok)
	}
	if tp, ok := s.Home([]byte("acme")); !ok || tp != 0 {
		t.Fatal("acme has no home")
	}
	b.DeleteService(0, "acme", "web", "api")
	b.DeletePod(0, "acme", "web", "p")
	b.Publish()
	s = b.Current()
	if s.Namespace(0, []byte("acme"), []byte("web")) != nil || s.Tenant(0, []byte("acme")) != nil {
		t.Fatal("empty namespace and tenant remain")
	}
	if _, ok := s.Source(a("127.0.0.11")); ok {
		t.Fatal("deleted pod still a source")
	}
	if _, ok := s.Home([]byte("acme")); ok {
		t.Fatal("tenant without objects has a home")
	}
	if len(s.PTRs(a("10.0.1.1"), nil)) != 0 {
		t.Fatal("deleted service still has a PTR")
	}
}

func TestEndpointSlicesMoveBetweenServices(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1"}})
	b.SetService(0, &Service{Tenant: "system", Namespace: "default", Name: "a", Type: Headless, Ports: []Port{{Port: NoPort}}})
	b.SetService(0, &Service{Tenant: "system", Namespace: "default", Name: "b", Type: Headless, Ports: []Port{{Port: NoPort}}})
	slice := func(svc string) *EndpointSlice {
		return &EndpointSlice{Tenant: "system", Namespace: "default", Name: "s1", Service: svc, Ports: []Port{{Port: NoPort}},
			Endpoints: []Endpoint{{Addrs: []netip.Addr{a("10.1.0.1")}, Hostname: "h"}, {Addrs: []netip.Addr{a("10.1.0.1")}}}}
	}
	b.SetEndpointSlice(0, slice("a"))
	b.Publish()
	ns := b.Current().Namespace(0, []byte("system"), []byte("default"))
	if sa := ns.Service("a"); len(sa.Endpoints) != 2 || sa.AddrCount() != 1 || sa.Addr(0) != a("10.1.0.1") {
		t.Fatalf("a: %+v", sa)
	}
	b.SetEndpointSlice(0, slice("b"))
	b.Publish()
	ns = b.Current().Namespace(0, []byte("system"), []byte("default"))
	if len(ns.Service("a").Endpoints) != 0 || len(ns.Service("b").Endpoints) != 2 {
		t.Fatalf("after the move: a=%d b=%d", len(ns.Service("a").Endpoints), len(ns.Service("b").Endpoints))
	}
	b.DeleteEndpointSlice(0, "system", "default", "s1")
	b.Publish()
	if n := len(b.Current().Namespace(0, []byte("system"), []byte("default")).Service("b").Endpoints); n != 0 {
		t.Fatalf("deleted slice left %d endpoints", n)
	}

	// A slice named after a service (a core/v1 Endpoints is always one)
	// that moves to another and back.
	named := func(svc string) *EndpointSlice {
		e := slice(svc)
		e.Name = "a"
		return e
	}
	counts := func() (int, int) {
		ns := b.Current().Namespace(0, []byte("system"), []byte("default"))
		return len(ns.Service("a").Endpoints), len(ns.Service("b").Endpoints)
	}
	for _, step := range []struct {
		svc  string
		a, b int
	}{{"a", 2, 0}, {"b", 0, 2}, {"a", 2, 0}} {
		b.SetEndpointSlice(0, named(step.svc))
		b.Publish()
		if na, nb := counts(); na != step.a || nb != step.b {
			t.Fatalf("slice a of service %s: a=%d b=%d endpoints", step.svc, na, nb)
		}
	}
	b.DeleteEndpointSlice(0, "system", "default", "a")
	b.Publish()
	if na, nb := counts(); na != 0 || nb != 0 {
		t.Fatalf("after deleting slice a: a=%d b=%d endpoints", na, nb)
	}
}

func TestConflictsAndHomes(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1", "tp2", "tp3"}})
	b.SetNamespace(2, "gamma", "x", true)
	b.SetNamespace(1, "gamma", "x", true)
	b.SetNamespace(0, "delta", "y", true)
	b.SetNamespace(0, "system", "kube-system", true)
	b.SetNamespace(1, "system", "kube-system", true)
	b.Publish()
	s := b.Current()
	if tp, _ := s.Home([]byte("gamma")); tp != 1 {
		t.Fatalf("gamma answered from tp%d", tp+1)
	}
	if len(s.Conflicts) != 1 || s.Conflicts[0] != "gamma" {
		t.Fatalf("conflicts %v (system is in every TP and is no conflict)", s.Conflicts)
	}
	b.SetNamespace(1, "gamma", "x", false)
	b.Publish()
	if s := b.Current(); len(s.Conflicts) != 0 {
		t.Fatalf("conflict remains: %v", s.Conflicts)
	} else if tp, _ := s.Home([]byte("gamma")); tp != 2 {
		t.Fatalf("gamma now in tp%d", tp+1)
	}
}

func TestHostNetworkPodsAreNoSource(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1", "tp2"}})
	b.SetPod(0, &Pod{Tenant: "system", Namespace: "kube-system", Name: "proxy", IPs: []netip.Addr{a("192.0.2.1")}, HostNetwork: true})
	b.SetPod(1, &Pod{Tenant: "beta", Namespace: "web", Name: "p", IPs: []netip.Addr{a("192.0.2.2")}})
	b.SetPod(0, &Pod{Tenant: "alpha", Namespace: "web", Name: "p", IPs: []netip.Addr{a("192.0.2.2")}})
	b.Publish()
	s := b.Current()
	if _, ok := s.Source(a("192.0.2.1")); ok {
		t.Fatal("a host-network address names a source")
	}
	if src, ok := s.Source(a("192.0.2.2")); !ok || src.TP != 0 || src.Tenant != "alpha" {
		t.Fatalf("shared address: %v (want the lowest TP)", src)
	}
}

func TestRunPublishesAndReportsLatency(t *testing.T) {
	var mu sync.Mutex
	var seen []time.Duration
	b := NewBuilder(Options{Partitions: []string{"tp1"}, ObserveLatency: func(d time.Duration) { mu.Lock(); seen = append(seen, d); mu.Unlock() }})
	ctx, cancel := contextWithCancel()
	defer cancel()
	go b.Run(ctx, time.Millisecond)
	b.SetService(0, svc("system", "default", "web", "10.0.0.1"))
	for b.Current().Namespace(0, []byte("system"), []byte("default")) == nil {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[0] < 0 {
		t.Fatalf("latency observations: %v", seen)
	}
}

// TestRunPublishesEarlyWhenMuchIsPending: however long Run would wait
// after a publish, it publishes as soon as maxWork changes are pending, so
// that a fast list does not pile up pending records; Publish starts the
// count over.
func TestRunPublishesEarlyWhenMuchIsPending(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1"}})
	b.maxWork = 20
	ctx, cancel := contextWithCancel()
	defer cancel()
	pod := func(i int) *Pod {
		return &Pod{Tenant: "system", Namespace: "default", Name: fmt.Sprint("p", i), IPs: []netip.Addr{netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})}}
	}
	published := func(i int) bool { _, ok := b.Current().Source(pod(i).IPs[0]); return ok }
	// An endpoint slice's addresses count too.
	b.SetEndpointSlice(0, &EndpointSlice{Tenant: "system", Namespace: "default", Name: "s", Service: "s", Ports: []Port{{Port: NoPort}},
		Endpoints: []Endpoint{{Addrs: []netip.Addr{a("10.1.0.1"), a("10.1.0.2")}}}})
	if b.work != 3 {
		t.Fatalf("pending work %d after a slice of 2 addresses, want 3", b.work)
	}
	b.Publish()
	if b.work != 0 {
		t.Fatalf("pending work %d after Publish", b.work)
	}
	// The slice's change left a wake-up pending, which Run takes at once:
	// pod 0 is set before Run starts, so that this first publish holds it
	// whenever Run gets to it (set after, it could miss the publish and
	// then wait the hour).
	b.SetPod(0, pod(0))
	go b.Run(ctx, time.Hour) // after its first publish, it waits an hour
	waitPublished := func(i int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !published(i); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("pod %d not published within 10 s", i)
			}
		}
	}
	waitPublished(0)
	for i := 1; i < b.maxWork; i++ {
		b.SetPod(0, pod(i))
	}
	if published(b.maxWork - 1) {
		t.Fatal("published before Run was due")
	}
	b.SetPod(0, pod(b.maxWork)) // the maxWork-th pending change
	waitPublished(b.maxWork)
}

// TestSourceTableNumbersNamespaces: the source table names namespaces by
// number; a namespace that goes and comes back keeps its number, and an
// older snapshot still reads its own sources.
func TestSourceTableNumbersNamespaces(t *testing.T) {
	if reflect.TypeOf(srcOwner{}).NumField() != 3 || reflect.TypeOf(srcOwner{}).Size() != 12 {
		t.Fatal("srcOwner is meant to be three uint32s, with no pointer for the collector")
	}
	b := NewBuilder(Options{Partitions: []string{"tp1", "tp2"}})
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "p", IPs: []netip.Addr{a("10.0.0.1")}})
	b.SetPod(1, &Pod{Tenant: "beta", Namespace: "web", Name: "p", IPs: []netip.Addr{a("10.0.0.2")}})
	b.Publish()
	s1 := b.Current()
	b.DeletePod(0, "acme", "web", "p") // the namespace goes
	b.Publish()
	if _, ok := b.Current().Source(a("10.0.0.1")); ok || b.Current().Namespace(0, []byte("acme"), []byte("web")) != nil {
		t.Fatal("the deleted pod's namespace is still there")
	}
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "q", IPs: []netip.Addr{a("10.0.0.3")}})
	b.Publish()
	s3 := b.Current()
	for _, c := range []struct {
		s    *Snapshot
		addr string
		want Source
		ok   bool
	}{
		{s1, "10.0.0.1", Source{TP: 0, Tenant: "acme"}, true},
		{s1, "10.0.0.2", Source{TP: 1, Tenant: "beta"}, true},
		{s1, "10.0.0.3", Source{}, false},
		{s3, "10.0.0.1", Source{}, false},
		{s3, "10.0.0.3", Source{TP: 0, Tenant: "acme"}, true},
	} {
		if got, ok := c.s.Source(a(c.addr)); got != c.want || ok != c.ok {
			t.Errorf("Source(%s) = %+v, %v; want %+v, %v", c.addr, got, ok, c.want, c.ok)
		}
	}
	if !s3.HasPod(a("10.0.0.3"), 0, []byte("acme"), []byte("web")) || s3.HasPod(a("10.0.0.3"), 1, []byte("acme"), []byte("web")) {
		t.Error("HasPod does not read the namespace's number")
	}
	if len(b.nsIDs) != 2 {
		t.Errorf("%d namespace numbers for two namespaces", len(b.nsIDs))
	}
}

func TestLookupsAllocateNothing(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1"}})
	b.SetService(0, svc("acme", "web", "api", "10.0.1.1"))
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "p", IPs: []netip.Addr{a("127.0.0.11")}})
	b.Publish()
	s := b.Current()
	tenant, ns, name := []byte("acme"), []byte("web"), []byte("api")
	var buf [4]PTR
	owners := 0
	allocs := testing.AllocsPerRun(100, func() {
		n := s.Namespace(0, tenant, ns)
		_ = n.ServiceBytes(name)
		_, _ = s.Home(tenant)
		_, _ = s.Source(a("127.0.0.11"))
		owners = len(s.PTRs(a("10.0.1.1"), buf[:0]))
	})
	if owners != 1 {
		t.Fatalf("PTRs found %d owners, want 1", owners)
	}
	if allocs != 0 {
		t.Fatalf("lookups allocate %v times", allocs)
	}
}

// relist delivers a list of kind to partition tp: set sets its objects.
func relist(b *Builder, tp int, kind Kind, set func()) {
	b.BeginList(tp, kind)
	set()
	b.EndList(tp, kind)
}

// TestRelistDeletesWhatTheListLacks: a (re)list replaces a partition's
// whole set of one kind, and leaves the other kinds and partitions alone.
func TestRelistDeletesWhatTheListLacks(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1", "tp2"}})
	b.SetNamespace(0, "acme", "web", true)
	b.SetNamespace(0, "acme", "old", true)
	b.SetService(0, svc("acme", "web", "gone", "10.0.0.1"))
	b.SetService(0, svc("acme", "web", "kept", "10.0.0.2"))
	b.SetService(1, svc("acme", "web", "gone", "10.0.1.1"))
	b.SetService(0, &Service{Tenant: "acme", Namespace: "web", Name: "db", Type: Headless, Ports: []Port{{Port: NoPort}}})
	b.SetEndpointSlice(0, &EndpointSlice{Tenant: "acme", Namespace: "web", Name: "db-1", Service: "db", Ports: []Port{{Port: NoPort}},
		Endpoints: []Endpoint{{Addrs: []netip.Addr{a("10.2.0.1")}}}})
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "gone", IPs: []netip.Addr{a("10.3.0.1")}})
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "kept", IPs: []netip.Addr{a("10.3.0.2")}})
	b.Publish()

	relist(b, 0, Services, func() {
		b.SetService(0, svc("acme", "web", "kept", "10.0.0.3"))
		b.SetService(0, &Service{Tenant: "acme", Namespace: "web", Name: "db", Type: Headless, Ports: []Port{{Port: NoPort}}})
		b.SetService(0, svc("acme", "web", "new", "10.0.0.4"))
	})
	relist(b, 0, EndpointSlices, func() {})
	relist(b, 0, Pods, func() {
		b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "kept", IPs: []netip.Addr{a("10.3.0.2")}})
	})
	relist(b, 0, Namespaces, func() { b.SetNamespace(0, "acme", "web", true) })
	b.Publish()
	s := b.Current()
	web := s.Namespace(0, []byte("acme"), []byte("web"))
	if web == nil || !web.Object {
		t.Fatal("acme/web lost its namespace object")
	}
	if web.Service("gone") != nil {
		t.Fatal("a service the list lacks remains")
	}
	if k := web.Service("kept"); k == nil || k.ClusterIPs()[0] != a("10.0.0.3") {
		t.Fatalf("kept service not updated: %+v", k)
	}
	if web.Service("new") == nil {
		t.Fatal("new service missing")
	}
	if n := len(web.Service("db").Endpoints); n != 0 {
		t.Fatalf("slices the list lacks left %d endpoints", n)
	}
	if len(s.PTRs(a("10.0.0.1"), nil)) != 0 || len(s.PTRs(a("10.2.0.1"), nil)) != 0 || len(s.PTRs(a("10.0.0.3"), nil)) != 1 {
		t.Fatal("reverse map not following the replace")
	}
	if _, ok := s.Source(a("10.3.0.1")); ok {
		t.Fatal("a pod the list lacks is still a source")
	}
	if _, ok := s.Source(a("10.3.0.2")); !ok {
		t.Fatal("a listed pod is no source")
	}
	if s.Namespace(0, []byte("acme"), []byte("old")) != nil {
		t.Fatal("a namespace the list lacks remains")
	}
	if s.Namespace(1, []byte("acme"), []byte("web")).Service("gone") == nil {
		t.Fatal("a replace in tp1 touched tp2")
	}
}

// TestRelistOfWhatIsThereChangesNothing: objects listed again as they are
// leave nothing to publish, so a relist (or a resync, or an update DNS does
// not see) costs no snapshot.
func TestRelistOfWhatIsThereChangesNothing(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1"}})
	db := func() *Service {
		return &Service{Tenant: "acme", Namespace: "web", Name: "db", Type: Headless, Ports: []Port{{Name: "sql", Protocol: "TCP", Port: 5432}}}
	}
	slice := func(addr string) *EndpointSlice {
		return &EndpointSlice{Tenant: "acme", Namespace: "web", Name: "db-1", Service: "db", Ports: []Port{{Name: "sql", Protocol: "TCP", Port: 5432}},
			Endpoints: []Endpoint{{Addrs: []netip.Addr{a(addr)}, Hostname: "db-0"}}}
	}
	pod := func() *Pod {
		return &Pod{Tenant: "acme", Namespace: "web", Name: "p", IPs: []netip.Addr{a("10.3.0.1"), a("fd00::1")}}
	}
	all := func() {
		relist(b, 0, Namespaces, func() { b.SetNamespace(0, "acme", "web", true) })
		relist(b, 0, Services, func() { b.SetService(0, svc("acme", "web", "api", "10.0.0.1")); b.SetService(0, db()) })
		relist(b, 0, EndpointSlices, func() { b.SetEndpointSlice(0, slice("10.2.0.1")) })
		relist(b, 0, Pods, func() { b.SetPod(0, pod()) })
	}
	all()
	if !b.Publish() {
		t.Fatal("the first list published nothing")
	}
	first := b.Current()
	all()
	if b.Publish() {
		t.Fatal("a relist of unchanged objects published a snapshot")
	}
	if b.Current() != first {
		t.Fatal("the snapshot changed")
	}
	b.SetEndpointSlice(0, slice("10.2.0.2"))
	if !b.Publish() {
		t.Fatal("a changed endpoint was taken for the same")
	}
	if got := b.Current().PTRs(a("10.2.0.2"), nil); len(got) != 1 || got[0].Host() != "db-0" {
		t.Fatalf("PTRs of the new endpoint = %v", got)
	}
}

// TestListInPagesAcrossPublishes: a list may be published half way (its
// objects so far are served) and still deletes, at its end, what it lacked;
// a list that failed half way deletes nothing, and the next one starts over.
func TestListInPagesAcrossPublishes(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1"}})
	for _, n := range []string{"a", "b", "c"} {
		b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: n, IPs: []netip.Addr{a("10.3.0." + map[string]string{"a": "1", "b": "2", "c": "3"}[n])}})
	}
	b.Publish()

	b.BeginList(0, Pods) // fails after its first page
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "d", IPs: []netip.Addr{a("10.3.0.4")}})
	b.Publish()
	b.BeginList(0, Pods)
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "a", IPs: []netip.Addr{a("10.3.0.1")}})
	b.Publish()
	s := b.Current()
	for _, ip := range []string{"10.3.0.1", "10.3.0.2", "10.3.0.3", "10.3.0.4"} {
		if _, ok := s.Source(a(ip)); !ok {
			t.Fatalf("%s is gone before the list has ended", ip)
		}
	}
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "c", IPs: []netip.Addr{a("10.3.0.3")}})
	b.EndList(0, Pods)
	b.Publish()
	s = b.Current()
	for ip, want := range map[string]bool{"10.3.0.1": true, "10.3.0.2": false, "10.3.0.3": true, "10.3.0.4": false} {
		if _, ok := s.Source(a(ip)); ok != want {
			t.Errorf("after the list, %s is a source: %v, want %v", ip, ok, want)
		}
	}
}

// TestPodAddressesFollowPods: a namespace keeps an address while any of its
// pods has it, an update moves it, and HasPod (verified pod records) and
// Source see the same.
func TestPodAddressesFollowPods(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1", "tp2"}})
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "p1", IPs: []netip.Addr{a("10.0.0.1")}})
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "p2", IPs: []netip.Addr{a("10.0.0.1")}, HostNetwork: true})
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "p3", IPs: []netip.Addr{a("10.0.0.3"), a("fd00::3")}})
	b.SetPod(1, &Pod{Tenant: "system", Namespace: "kube-system", Name: "p1", IPs: []netip.Addr{a("10.0.0.1")}})
	b.Publish()
	s := b.Current()
	has := func(s *Snapshot, ip string, tp int, tenant, ns string) bool {
		return s.HasPod(a(ip), tp, []byte(tenant), []byte(ns))
	}
	for _, c := range []struct {
		ip, tenant, ns string
		tp             int
		want           bool
	}{
		{"10.0.0.1", "acme", "web", 0, true},
		{"10.0.0.1", "system", "kube-system", 1, true},
		{"10.0.0.1", "acme", "web", 1, false},
		{"10.0.0.1", "acme", "other", 0, false},
		{"fd00::3", "acme", "web", 0, true},
		{"10.0.0.9", "acme", "web", 0, false},
	} {
		if got := has(s, c.ip, c.tp, c.tenant, c.ns); got != c.want {
			t.Errorf("HasPod(%s, tp%d, %s/%s) = %v", c.ip, c.tp+1, c.tenant, c.ns, got)
		}
	}
	if n := s.Namespace(0, []byte("acme"), []byte("web")); n == nil || n.PodAddrs != 3 {
		t.Fatalf("acme/web pod addresses: %+v", n)
	}
	// p1 leaves 10.0.0.1 to the host-network p2: still a pod address, no
	// longer a source of acme; tp2's pod now is.
	b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: "p1", IPs: []netip.Addr{a("10.0.0.2")}})
	b.DeletePod(0, "acme", "web", "p3")
	b.Publish()
	s2 := b.Current()
	if !has(s2, "10.0.0.1", 0, "acme", "web") || !has(s2, "10.0.0.2", 0, "acme", "web") || has(s2, "10.0.0.3", 0, "acme", "web") || has(s2, "fd00::3", 0, "acme", "web") {
		t.Fatal("pod addresses did not follow the update and the delete")
	}
	if src, ok := s2.Source(a("10.0.0.1")); !ok || src.TP != 1 || src.Tenant != "system" {
		t.Fatalf("source of 10.0.0.1: %v %v (want tp2's system pod)", src, ok)
	}
	if !has(s, "10.0.0.3", 0, "acme", "web") {
		t.Fatal("the old snapshot changed")
	}
	b.DeletePod(0, "acme", "web", "p2")
	b.DeletePod(0, "acme", "web", "p1")
	b.Publish()
	if s3 := b.Current(); has(s3, "10.0.0.1", 0, "acme", "web") || s3.Namespace(0, []byte("acme"), []byte("web")) != nil {
		t.Fatal("a namespace without pods keeps addresses")
	}
}

// TestServiceChangesBetweenPublishes: several changes to one service
// between two publishes count once, and a namespace whose services are all
// gone is dropped.
func TestServiceChangesBetweenPublishes(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1"}})
	b.SetService(0, svc("acme", "web", "api", "10.0.0.1"))
	b.Publish()
	b.SetService(0, svc("acme", "web", "api", "10.0.0.2")) // update: still one
	b.SetService(0, svc("acme", "web", "db", "10.0.0.3"))
	b.DeleteService(0, "acme", "web", "db")
	b.DeleteService(0, "acme", "web", "db")      // twice
	b.DeleteService(0, "acme", "web", "unknown") // never existed
	b.Publish()
	web := b.Current().Namespace(0, []byte("acme"), []byte("web"))
	if web == nil || web.ServiceCount() != 1 || web.Service("api").ClusterIPs()[0] != a("10.0.0.2") {
		t.Fatalf("acme/web: %+v", web)
	}
	b.DeleteService(0, "acme", "web", "api")
	b.SetService(0, svc("acme", "web", "api", "10.0.0.4"))
	b.DeleteService(0, "acme", "web", "api")
	b.Publish()
	if n := b.Current().Namespace(0, []byte("acme"), []byte("web")); n != nil {
		t.Fatalf("namespace without services remains: %+v", n)
	}
	if len(b.Current().PTRs(a("10.0.0.2"), nil)) != 0 || len(b.Current().PTRs(a("10.0.0.4"), nil)) != 0 {
		t.Fatal("deleted service keeps PTRs")
	}
}

func TestDistinctAddrs(t *testing.T) {
	eps := func(ips ...string) []EndpointView {
		var out []EndpointView
		for _, ip := range ips {
			out = append(out, EndpointView{addr: keyOf(a(ip)), meta: &endpointMeta{}})
		}
		return out
	}
	many := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.7", "10.0.0.8", "10.0.0.9"}
	for _, c := range []struct {
		name string
		eps  []EndpointView
		want []string // nil: the endpoints' own addresses
	}{
		{"none", nil, nil},
		{"distinct", eps("10.0.0.1", "fd00::1"), nil},
		{"repeat", eps("10.0.0.2", "10.0.0.1", "10.0.0.2"), []string{"10.0.0.2", "10.0.0.1"}},
		{"many distinct", eps(many...), nil},
		{"many with a repeat", eps(append(many, "10.0.0.1")...), many},
	} {
		got := distinctAddrs(c.eps)
		if c.want == nil {
			if got != nil {
				t.Errorf("%s: %v, want nil", c.name, got)
			}
			continue
		}
		var want []netip.Addr
		for _, ip := range c.want {
			want = append(want, a(ip))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
		sv := &ServiceView{Endpoints: c.eps, more: &viewMore{addrs: got}}
		if sv.AddrCount() != len(want) || sv.Addr(len(want)-1) != want[len(want)-1] {
			t.Errorf("%s: AddrCount/Addr disagree with %v", c.name, want)
		}
	}
}

// A PTR tells a cluster IP from an endpoint and leads to its service, which
// is how the server finds the services in front of its own address.
func TestPTROwners(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1"}})
	b.SetService(0, svc("system", "kube-system", "kube-dns", "10.0.0.10"))
	b.SetEndpointSlice(0, &EndpointSlice{Tenant: "system", Namespace: "kube-system", Name: "kube-dns-x", Service: "kube-dns",
		Ports: []Port{{Port: NoPort}}, Endpoints: []Endpoint{{Addrs: []netip.Addr{a("10.244.0.20")}}}})
	b.Publish()
	s := b.Current()
	vip := s.PTRs(a("10.0.0.10"), nil)
	ep := s.PTRs(a("10.244.0.20"), nil)
	if len(vip) != 1 || vip[0].IsEndpoint() || vip[0].View().Name != "kube-dns" {
		t.Fatalf("cluster IP owner: %+v", vip)
	}
	if len(ep) != 1 || !ep[0].IsEndpoint() || ep[0].View().Name != "kube-dns" || ep[0].View().ClusterIPs()[0] != a("10.0.0.10") || ep[0].Host() != "10-244-0-20" {
		t.Fatalf("endpoint owner: %+v", ep)
	}
	if v := ep[0].View(); v == nil || v.AddrCount() != 1 || v.Addr(0) != a("10.244.0.20") {
		t.Fatalf("the endpoint's service view: %+v", v)
	}
}

// TestPTRsFollowTheirViews: the reverse table keeps an owner as its
// namespace's number, its service's name hash and its endpoint's index;
// each must lead to the owner in the current views as endpoints move in
// their service's list, a service goes and comes back, and a namespace
// of the same name returns in another tenant's place.
func TestPTRsFollowTheirViews(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1", "tp2"}})
	eps := func(tp int, tenant, svc string, hosts ...string) {
		t.Helper()
		s := &EndpointSlice{Tenant: tenant, Namespace: "web", Name: svc, Service: svc, Ports: []Port{{Port: NoPort}}}
		for i, h := range hosts {
			s.Endpoints = append(s.Endpoints, Endpoint{Addrs: []netip.Addr{a(fmt.Sprintf("10.2.0.%d", i+1))}, Hostname: h})
		}
		b.SetEndpointSlice(tp, s)
	}
	// owners lists the owners of addr as tp/tenant/service/host.
	owners := func(addr string) []string {
		var out []string
		for _, p := range b.Current().PTRs(a(addr), nil) {
			out = append(out, fmt.Sprintf("%d/%s/%s/%s", p.TP, p.Tenant, p.Service(), p.Host()))
		}
		slices.Sort(out)
		return out
	}
	check := func(addr string, want ...string) {
		t.Helper()
		if got := owners(addr); !slices.Equal(got, want) {
			t.Fatalf("owners of %s: %v, want %v", addr, got, want)
		}
	}
	b.SetService(0, svc("acme", "web", "db", "10.0.0.1"))
	eps(0, "acme", "db", "a", "b", "c")
	b.SetService(1, svc("system", "web", "db", "10.0.0.1"))
	eps(1, "system", "db", "x", "y")
	b.Publish()
	check("10.0.0.1", "0/acme/db/", "1/system/db/")
	check("10.2.0.2", "0/acme/db/b", "1/system/db/y")
	check("10.2.0.3", "0/acme/db/c")

	// Endpoint c moves to index 0 of its view, and 10.2.0.2 goes to a
	// new host: each address must name the endpoint that now has it.
	eps(0, "acme", "db", "c2", "b2")
	b.Publish()
	check("10.2.0.1", "0/acme/db/c2", "1/system/db/x")
	check("10.2.0.2", "0/acme/db/b2", "1/system/db/y")
	check("10.2.0.3")

	// The service goes with its namespace, and comes back.
	b.DeleteService(0, "acme", "web", "db")
	b.DeleteEndpointSlice(0, "acme", "web", "db")
	b.Publish()
	check("10.0.0.1", "1/system/db/")
	check("10.2.0.1", "1/system/db/x")
	b.SetService(0, svc("acme", "web", "db", "10.0.0.1"))
	eps(0, "acme", "db", "d")
	b.Publish()
	check("10.2.0.1", "0/acme/db/d", "1/system/db/x")

	// A service of another name at the same address is another owner.
	b.SetService(1, svc("system", "web", "cache", "10.0.0.1"))
	b.Publish()
	check("10.0.0.1", "0/acme/db/", "1/system/cache/", "1/system/db/")
}

// TestLargePublishesWriteEveryAddress: a publish that changes most address
// shards (a list's page does) writes them in steps; the result must hold
// every address, and the snapshot before it must keep its own.
func TestLargePublishesWriteEveryAddress(t *testing.T) {
	const n = 4000 // over a thousand shards' worth of addresses
	b := NewBuilder(Options{Partitions: []string{"tp1"}})
	ip := func(base byte, i int) netip.Addr { return netip.AddrFrom4([4]byte{10, base, byte(i >> 8), byte(i)}) }
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: name, IPs: []netip.Addr{ip(1, i)}})
		b.SetService(0, &Service{Tenant: "acme", Namespace: "web", Name: name, ClusterIPs: []netip.Addr{ip(2, i)}, Ports: []Port{{Port: NoPort}}})
	}
	b.Publish()
	s1 := b.Current()
	for i := range n {
		b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: fmt.Sprintf("p%d", i), IPs: []netip.Addr{ip(3, i)}})
	}
	b.Publish()
	s2 := b.Current()
	for i := range n {
		if !s1.HasPod(ip(1, i), 0, []byte("acme"), []byte("web")) || s1.HasPod(ip(3, i), 0, []byte("acme"), []byte("web")) {
			t.Fatalf("pod %d: the first snapshot lost or gained an address", i)
		}
		if s2.HasPod(ip(1, i), 0, []byte("acme"), []byte("web")) || !s2.HasPod(ip(3, i), 0, []byte("acme"), []byte("web")) {
			t.Fatalf("pod %d: the second snapshot has not moved it", i)
		}
		for _, s := range []*Snapshot{s1, s2} {
			if p := s.PTRs(ip(2, i), nil); len(p) != 1 || p[0].View().Name != fmt.Sprintf("p%d", i) {
				t.Fatalf("service %d: PTRs %v", i, p)
			}
		}
	}
}

// TestFirstListsPublished: readiness waits for the publish that folds in a
// partition's first lists, an empty list's included; a relist does not
// make the server unready again.
func TestFirstListsPublished(t *testing.T) {
	b := NewBuilder(Options{Partitions: []string{"tp1", "tp2"}})
	pod := func(name, ip string) func() {
		return func() { b.SetPod(0, &Pod{Tenant: "acme", Namespace: "web", Name: name, IPs: []netip.Addr{a(ip)}}) }
	}
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"nothing listed yet", func() {}, true},
		{"a list in progress", func() { b.BeginList(0, Pods); pod("a", "10.4.0.1")() }, true},
		{"a first list ended", func() { b.EndList(0, Pods) }, false},
		{"published", func() { b.Publish() }, true},
		{"an empty first list ended", func() { relist(b, 1, Pods, func() {}) }, false},
		{"published with nothing pending", func() { b.Publish() }, true},
		{"a relist ended", func() { relist(b, 0, Pods, pod("b", "10.4.0.2")) }, true},
		{"a first list of another kind ended", func() { relist(b, 0, Services, func() {}) }, false},
		{"published again", func() { b.Publish() }, true},
	}
	for _, st := range steps {
		st.do()
		if got := b.FirstListsPublished(); got != st.want {
			t.Fatalf("%s: FirstListsPublished %v, want %v", st.name, got, st.want)
		}
	}
}

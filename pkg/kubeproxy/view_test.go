package kubeproxy

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/corelog"
)

// TestServicePortNameString: the string is Arktos's ServicePortName.String,
// fmt.Sprintf("%s_%d/%s/%s:%s", tenant, tenantPartitionId, namespace, name,
// port), byte for byte, unnamed ports included.
func TestServicePortNameString(t *testing.T) {
	arktos := func(n ServicePortName) string {
		return fmt.Sprintf("%s_%d/%s/%s:%s", n.Tenant, n.TenantPartitionID, n.Namespace, n.Name, n.Port)
	}
	cases := []struct {
		n    ServicePortName
		want string
	}{
		{spn(tp0, "system", "kube-system", "kube-dns", "dns"), "system_0/kube-system/kube-dns:dns"},
		{spn(tp1, "system", "kube-system", "kube-dns", "dns"), "system_1/kube-system/kube-dns:dns"},
		{spn(tp0, "t1", "default", "web", ""), "t1_0/default/web:"},
		{spn(12, "t2", "ns", "db", "pg"), "t2_12/ns/db:pg"},
	}
	for _, tc := range cases {
		if got := tc.n.String(); got != tc.want || got != arktos(tc.n) {
			t.Errorf("%+v.String() = %q, want %q (Arktos prints %q)", tc.n, got, tc.want, arktos(tc.n))
		}
		if got, want := tc.n.ServiceName.String(), fmt.Sprintf("%s_%d/%s/%s", tc.n.Tenant, tc.n.TenantPartitionID, tc.n.Namespace, tc.n.Name); got != want {
			t.Errorf("ServiceName.String() = %q, want %q", got, want)
		}
	}
}

// TestSameSystemServiceInTwoTPs is the heart of the issue: one name, two TPs,
// two services, each with only its own endpoints.
func TestSameSystemServiceInTwoTPs(t *testing.T) {
	v := NewView([]int{tp0, tp1}, Options{})
	v.OnServiceAdd(svcRec("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)), tp0)
	v.OnServiceAdd(svcRec("system", "kube-system", "kube-dns", "10.1.0.10", port("dns", 53)), tp1)
	v.OnEndpointsAdd(epsRec("", "kube-system", "kube-dns", "kube-dns", "dns", 5353, ready("192.168.1.1", "192.168.1.2")...), tp0)
	v.OnEndpointsAdd(epsRec("", "kube-system", "kube-dns", "kube-dns", "dns", 5353, ready("192.168.2.1")...), tp1)

	s := v.Snapshot()
	if s.Len() != 2 || s.Services() != 2 {
		t.Fatalf("snapshot has %d ports in %d services, want 2 in 2", s.Len(), s.Services())
	}
	n1, n2 := spn(tp0, "system", "kube-system", "kube-dns", "dns"), spn(tp1, "system", "kube-system", "kube-dns", "dns")
	if got, want := endpointIPs(t, s, n1), []string{"192.168.1.1:5353", "192.168.1.2:5353"}; !slices.Equal(got, want) {
		t.Errorf("%s endpoints = %v, want %v", n1, got, want)
	}
	if got, want := endpointIPs(t, s, n2), []string{"192.168.2.1:5353"}; !slices.Equal(got, want) {
		t.Errorf("%s endpoints = %v, want %v", n2, got, want)
	}
	p1, _ := s.Port(n1)
	p2, _ := s.Port(n2)
	if p1.ClusterIPs[0].String() != "10.0.0.10" || p2.ClusterIPs[0].String() != "10.1.0.10" {
		t.Errorf("cluster IPs %v and %v, want each TP's own", p1.ClusterIPs, p2.ClusterIPs)
	}
}

// TestEndpointsNeverFeedAnotherTP: endpoints of TP 1 name a service that
// exists only in TP 0. TP 0's service must not get them.
func TestEndpointsNeverFeedAnotherTP(t *testing.T) {
	v := NewView([]int{tp0, tp1}, Options{})
	v.OnServiceAdd(svcRec("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)), tp0)
	v.OnEndpointsAdd(epsRec("", "kube-system", "x", "kube-dns", "dns", 53, ready("192.168.2.9")...), tp1)
	// Same TP, other tenant or namespace: also not this service.
	v.OnEndpointsAdd(epsRec("t1", "kube-system", "y", "kube-dns", "dns", 53, ready("192.168.1.8")...), tp0)
	v.OnEndpointsAdd(epsRec("", "default", "z", "kube-dns", "dns", 53, ready("192.168.1.7")...), tp0)
	s := v.Snapshot()
	n := spn(tp0, "system", "kube-system", "kube-dns", "dns")
	if eps := endpointIPs(t, s, n); len(eps) != 0 {
		t.Fatalf("%s got endpoints %v from elsewhere", n, eps)
	}
	if s.Len() != 1 {
		t.Fatalf("snapshot has %d ports, want 1: endpoints without a service serve nothing", s.Len())
	}
}

func TestPortsAndEndpoints(t *testing.T) {
	notReady := epSpec{ip: "192.168.0.3", notReady: true}
	cases := []struct {
		name string
		svc  *Service
		eps  []*Endpoints
		want map[string][]string // port name string -> endpoints
	}{
		{
			name: "ready only, sorted, deduplicated across objects",
			svc:  svcRec("t1", "ns", "web", "10.0.0.1", port("http", 80)),
			eps:  []*Endpoints{epsRec("t1", "ns", "a", "web", "http", 8080, epSpec{ip: "192.168.0.2"}, notReady), epsRec("t1", "ns", "b", "web", "http", 8080, ready("192.168.0.1", "192.168.0.2")...)},
			want: map[string][]string{"t1_0/ns/web:http": {"192.168.0.1:8080", "192.168.0.2:8080"}},
		},
		{
			name: "ports match by name and protocol",
			svc:  svcRec("t1", "ns", "dns", "10.0.0.2", port("tcp", 53), udpPort("udp", 53)),
			eps: []*Endpoints{epsRec("t1", "ns", "a", "dns", "tcp", 5353, ready("192.168.0.1")...), epsRec("t1", "ns", "b", "dns", "other", 1, ready("192.168.0.9")...),
				// Named udp but TCP: not the udp port.
				epsRec("t1", "ns", "c", "dns", "udp", 5353, ready("192.168.0.8")...)},
			want: map[string][]string{"t1_0/ns/dns:tcp": {"192.168.0.1:5353"}, "t1_0/ns/dns:udp": nil},
		},
		{
			name: "headless serves nothing",
			svc:  svcRec("t1", "ns", "db", "None", port("pg", 5432)),
			want: map[string][]string{},
		},
		{
			name: "invalid endpoint addresses are skipped",
			svc:  svcRec("t1", "ns", "web", "10.0.0.1", port("", 80)),
			eps:  []*Endpoints{epsRec("t1", "ns", "a", "web", "", 8080, ready("not-an-ip", "fe80::1%eth0", "192.168.0.4")...)},
			want: map[string][]string{"t1_0/ns/web:": {"192.168.0.4:8080"}},
		},
		{
			name: "IPv4-mapped addresses are unmapped",
			svc:  svcRec("t1", "ns", "web", "::ffff:10.0.0.1", port("p", 80)),
			eps:  []*Endpoints{epsRec("t1", "ns", "web", "web", "p", 8080, ready("::ffff:192.168.0.5")...)},
			want: map[string][]string{"t1_0/ns/web:p": {"192.168.0.5:8080"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := NewView([]int{tp0}, Options{})
			v.OnServiceAdd(tc.svc, tp0)
			for _, e := range tc.eps {
				v.OnEndpointsAdd(e, tp0)
			}
			s := v.Snapshot()
			got := map[string][]string{}
			for p := range s.All() {
				got[p.Name.String()] = endpointIPs(t, s, p.Name)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("ports %v, want %v", got, tc.want)
			}
			for k, w := range tc.want {
				if g, ok := got[k]; !ok || !slices.Equal(g, w) {
					t.Errorf("%s = %v, want %v (all %v)", k, g, w, got)
				}
			}
		})
	}
}

// TestEndpointsObject: one core/v1 Endpoints, flattened, feeds each service
// port from the entries with its name; not-ready addresses stay out; an
// update replaces the whole object.
func TestEndpointsObject(t *testing.T) {
	v := NewView([]int{tp0, tp1}, Options{})
	v.OnServiceAdd(svcRec("acme", "web", "api", "10.0.0.20", port("http", 80), port("admin", 81)), tp0)
	v.OnServiceAdd(svcRec("acme", "web", "api", "10.1.0.20", port("http", 80)), tp1)
	obj := &Endpoints{Tenant: "acme", Namespace: "web", Name: "api", Service: "api", Endpoints: []Endpoint{
		{Address: "192.168.1.1", PortName: "http", Port: 8080, Ready: true},
		{Address: "192.168.1.9", PortName: "http", Port: 8080},
		{Address: "192.168.1.2", PortName: "http", Protocol: "TCP", Port: 8080, Ready: true},
		{Address: "192.168.1.2", PortName: "admin", Port: 9090, Ready: true, NodeName: "node-1"},
	}}
	v.OnEndpointsAdd(obj, tp0)
	v.OnEndpointsAdd(&Endpoints{Tenant: "acme", Namespace: "web", Name: "api", Service: "api", Endpoints: []Endpoint{{Address: "192.168.2.1", PortName: "http", Port: 8080, Ready: true}}}, tp1)

	s := v.Snapshot()
	httpName, adminName := spn(tp0, "acme", "web", "api", "http"), spn(tp0, "acme", "web", "api", "admin")
	if got, want := endpointIPs(t, s, httpName), []string{"192.168.1.1:8080", "192.168.1.2:8080"}; !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v (ready addresses only)", httpName, got, want)
	}
	if got := s.Endpoints(adminName); len(got) != 1 || got[0].AddrPort().String() != "192.168.1.2:9090" || got[0].NodeName != "node-1" {
		t.Errorf("%s = %+v, want 192.168.1.2:9090 on node-1", adminName, got)
	}
	if got, want := endpointIPs(t, s, spn(tp1, "acme", "web", "api", "http")), []string{"192.168.2.1:8080"}; !slices.Equal(got, want) {
		t.Errorf("tp1 = %v, want %v", got, want)
	}

	// The admin entries go: their endpoints with them.
	upd := *obj
	upd.Endpoints = obj.Endpoints[:1]
	v.OnEndpointsUpdate(obj, &upd, tp0)
	s = v.Snapshot()
	if got, want := endpointIPs(t, s, httpName), []string{"192.168.1.1:8080"}; !slices.Equal(got, want) {
		t.Errorf("after the update %s = %v, want %v", httpName, got, want)
	}
	if got := endpointIPs(t, s, adminName); len(got) != 0 {
		t.Errorf("after the update %s = %v, want none", adminName, got)
	}

	// Deleting tp0's endpoints leaves tp1's.
	v.OnEndpointsDelete(&Endpoints{Tenant: "acme", Namespace: "web", Name: "api"}, tp0)
	s = v.Snapshot()
	if got := endpointIPs(t, s, httpName); len(got) != 0 {
		t.Errorf("after the delete %s = %v", httpName, got)
	}
	if got := endpointIPs(t, s, spn(tp1, "acme", "web", "api", "http")); len(got) != 1 {
		t.Errorf("tp0's delete touched tp1: %v", got)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.epCount[tp0] != 0 || v.epCount[tp1] != 1 {
		t.Errorf("endpoints bookkeeping holds %d objects of tp0 and %d of tp1, want 0 and 1", v.epCount[tp0], v.epCount[tp1])
	}
	if _, ok := v.ownerLocked(nameOf(tp0, "acme", "web", "api")); ok {
		t.Error("tp0's deleted endpoints object is still known")
	}
	if svc, ok := v.ownerLocked(nameOf(tp1, "acme", "web", "api")); !ok || svc != "api" {
		t.Errorf("tp1's endpoints object feeds %q (known: %v), want api", svc, ok)
	}
}

func TestApplyIsIncremental(t *testing.T) {
	v := NewView([]int{tp0, tp1}, Options{})
	for _, tp := range []int{tp0, tp1} {
		v.OnServiceAdd(svcRec("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)), tp)
		v.OnServiceAdd(svcRec("", "default", "web", "10.0.0.20", port("http", 80)), tp)
		v.OnEndpointsAdd(epsRec("", "kube-system", "d", "kube-dns", "dns", 53, ready("192.168.0.1")...), tp)
	}
	s := NewSnapshot()
	if c := v.Apply(s); !c.Full || s.Len() != 4 {
		t.Fatalf("first Apply = %+v with %d ports, want a full one with 4", c, s.Len())
	}
	if c := v.Apply(s); c.Full || len(c.Services) != 0 {
		t.Fatalf("Apply without events = %+v, want nothing", c)
	}

	// An endpoint change in TP 1 touches only TP 1's kube-dns.
	v.OnEndpointsUpdate(nil, epsRec("", "kube-system", "d", "kube-dns", "dns", 53, ready("192.168.0.1", "192.168.0.2")...), tp1)
	dns1 := sname(tp1, "system", "kube-system", "kube-dns")
	if c := v.Apply(s); c.Full || !slices.Equal(c.Services, []ServiceName{dns1}) {
		t.Fatalf("Apply = %+v, want only %v", c, dns1)
	}
	if got := endpointIPs(t, s, spn(tp0, "system", "kube-system", "kube-dns", "dns")); !slices.Equal(got, []string{"192.168.0.1:53"}) {
		t.Fatalf("tp0 kube-dns changed too: %v", got)
	}

	// An update that a proxy cannot see (the same record again) changes
	// nothing.
	same := svcRec("system", "default", "web", "10.0.0.20", port("http", 80))
	v.OnServiceUpdate(nil, same, tp0)
	if c := v.Apply(s); len(c.Services) != 0 {
		t.Fatalf("invisible update produced %+v", c)
	}

	// Deleting TP 0's web leaves TP 1's.
	v.OnServiceDelete(same, tp0)
	web0 := sname(tp0, "system", "default", "web")
	if c := v.Apply(s); !slices.Equal(c.Services, []ServiceName{web0}) || s.Service(web0) != nil || s.Len() != 3 {
		t.Fatalf("after delete: %+v, %d ports", c, s.Len())
	}

	// A second consumer gets a full snapshot; the first one then does too.
	other := NewSnapshot()
	if c := v.Apply(other); !c.Full || other.Len() != 3 {
		t.Fatalf("second consumer: %+v, %d ports", c, other.Len())
	}
	if c := v.Apply(s); !c.Full {
		t.Fatalf("first consumer after a second one must be rebuilt, got %+v", c)
	}
}

func TestEndpointsMoveBetweenServices(t *testing.T) {
	v := NewView([]int{tp0}, Options{})
	v.OnServiceAdd(svcRec("t1", "ns", "a", "10.0.0.1", port("p", 80)), tp0)
	v.OnServiceAdd(svcRec("t1", "ns", "b", "10.0.0.2", port("p", 80)), tp0)
	v.OnEndpointsAdd(epsRec("t1", "ns", "s", "a", "p", 80, ready("192.168.0.1")...), tp0)
	s := NewSnapshot()
	v.Apply(s)
	v.OnEndpointsUpdate(nil, epsRec("t1", "ns", "s", "b", "p", 80, ready("192.168.0.1")...), tp0)
	c := v.Apply(s)
	if len(c.Services) != 2 {
		t.Fatalf("changes %+v, want both services", c)
	}
	if a, b := endpointIPs(t, s, spn(tp0, "t1", "ns", "a", "p")), endpointIPs(t, s, spn(tp0, "t1", "ns", "b", "p")); len(a) != 0 || len(b) != 1 {
		t.Fatalf("a=%v b=%v", a, b)
	}
	// No service any more (a slice lost its label): it feeds nothing.
	v.OnEndpointsUpdate(nil, epsRec("t1", "ns", "s", "", "p", 80, ready("192.168.0.1")...), tp0)
	v.Apply(s)
	if b := endpointIPs(t, s, spn(tp0, "t1", "ns", "b", "p")); len(b) != 0 {
		t.Fatalf("detached endpoints still feed b: %v", b)
	}
	if v.Stats().Skipped != 0 {
		t.Fatalf("a detached object is not invalid: skipped %d", v.Stats().Skipped)
	}
}

// TestNamesakeEndpointsMove: an object named after the service it feeds
// (every core/v1 Endpoints) is found without an owner entry; once it feeds
// another service, and back, and when deleted, the bookkeeping follows.
func TestNamesakeEndpointsMove(t *testing.T) {
	v := NewView([]int{tp0}, Options{})
	v.OnServiceAdd(svcRec("t1", "ns", "a", "10.0.0.1", port("p", 80)), tp0)
	v.OnServiceAdd(svcRec("t1", "ns", "b", "10.0.0.2", port("p", 80)), tp0)
	a, b := spn(tp0, "t1", "ns", "a", "p"), spn(tp0, "t1", "ns", "b", "p")
	steps := []struct {
		feeds      string // the service object "a" feeds; "" deletes it
		a, b       int    // endpoints each service then serves
		count      int    // endpoints objects the view holds
		ownerEntry bool
	}{
		{feeds: "a", a: 1, count: 1},
		{feeds: "b", b: 1, count: 1, ownerEntry: true},
		{feeds: "a", a: 1, count: 1},
		{feeds: "", count: 0},
	}
	for i, st := range steps {
		if st.feeds == "" {
			v.OnEndpointsDelete(epsRec("t1", "ns", "a", "a", "p", 80), tp0)
		} else {
			v.OnEndpointsUpdate(nil, epsRec("t1", "ns", "a", st.feeds, "p", 80, ready("192.168.0.1")...), tp0)
		}
		s := v.Snapshot()
		if got, want := [2]int{len(s.Endpoints(a)), len(s.Endpoints(b))}, [2]int{st.a, st.b}; got != want {
			t.Errorf("step %d (feeds %q): a, b serve %v endpoints, want %v", i, st.feeds, got, want)
		}
		v.mu.Lock()
		count, entry := v.epCount[tp0], len(v.owner) == 1
		v.mu.Unlock()
		if count != st.count || entry != st.ownerEntry {
			t.Errorf("step %d (feeds %q): %d objects held, owner entry %v; want %d, %v", i, st.feeds, count, entry, st.count, st.ownerEntry)
		}
	}
}

// TestSnapshotsKeepTheirEndpoints: a port fed by one object shares that
// object's endpoints with the snapshot; a second object, an update or a
// delete must leave an earlier snapshot's endpoints as they were.
func TestSnapshotsKeepTheirEndpoints(t *testing.T) {
	v := NewView([]int{tp0}, Options{})
	v.OnServiceAdd(svcRec("t1", "ns", "web", "10.0.0.1", port("p", 80)), tp0)
	v.OnEndpointsAdd(epsRec("t1", "ns", "web", "web", "p", 80, ready("192.168.0.3", "192.168.0.1")...), tp0)
	name := spn(tp0, "t1", "ns", "web", "p")
	first := v.Snapshot()
	want := []string{"192.168.0.1:80", "192.168.0.3:80"}
	v.OnEndpointsAdd(epsRec("t1", "ns", "web-2", "web", "p", 80, ready("192.168.0.2", "192.168.0.0")...), tp0)
	second := v.Snapshot()
	if got, w := endpointIPs(t, second, name), []string{"192.168.0.0:80", "192.168.0.1:80", "192.168.0.2:80", "192.168.0.3:80"}; !slices.Equal(got, w) {
		t.Errorf("two objects serve %v, want %v", got, w)
	}
	v.OnEndpointsUpdate(nil, epsRec("t1", "ns", "web", "web", "p", 80, ready("192.168.0.9")...), tp0)
	v.OnEndpointsDelete(epsRec("t1", "ns", "web-2", "web", "p", 80), tp0)
	if got := endpointIPs(t, v.Snapshot(), name); !slices.Equal(got, []string{"192.168.0.9:80"}) {
		t.Errorf("after the update and delete %v, want [192.168.0.9:80]", got)
	}
	if got := endpointIPs(t, first, name); !slices.Equal(got, want) {
		t.Errorf("the first snapshot changed to %v, want %v", got, want)
	}
}

// TestRecordsAreNotKept: a caller may reuse a record and its slices once a
// call returns, and pass nil as an update's old record.
func TestRecordsAreNotKept(t *testing.T) {
	v := NewView([]int{tp0}, Options{})
	svc := svcRec("t1", "ns", "web", "10.0.0.1", port("p", 80))
	v.OnServiceUpdate(nil, svc, tp0)
	eps := epsRec("t1", "ns", "web", "web", "p", 80, ready("192.168.0.1", "192.168.0.2")...)
	v.OnEndpointsUpdate(nil, eps, tp0)
	// The caller reuses both records for other objects.
	svc.Name, svc.ClusterIPs[0], svc.Ports[0].Port = "other", "10.0.0.9", 81
	eps.Name, eps.Service = "other", "other"
	eps.Endpoints[0].Address, eps.Endpoints[1].Address = "192.168.9.9", "192.168.9.8"
	s := v.Snapshot()
	name := spn(tp0, "t1", "ns", "web", "p")
	if got, want := endpointIPs(t, s, name), []string{"192.168.0.1:80", "192.168.0.2:80"}; !slices.Equal(got, want) {
		t.Errorf("after the records were reused: %v, want %v", got, want)
	}
	if p, ok := s.Port(name); !ok || p.Port != 80 || p.ClusterIPs[0].String() != "10.0.0.1" {
		t.Errorf("after the records were reused: port %+v (%v)", p, ok)
	}
}

// tenantMap is a fixed TenantPartitions answer, as pkg/tporigin's tracker
// gives at one moment.
type tenantMap struct {
	mu sync.Mutex
	m  map[string]int
}

func (t *tenantMap) PartitionOfTenant(tenant string) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.m[tenant]
	return p, ok
}

func TestRegularTenantServedFromItsTP(t *testing.T) {
	tm := &tenantMap{m: map[string]int{"t1": tp0}}
	v := NewView([]int{tp0, tp1}, Options{Tenants: tm})
	// A stray copy of t1's service in TP 1, and t2, which the tracker does
	// not know yet.
	v.OnServiceAdd(svcRec("t1", "ns", "web", "10.0.0.1", port("http", 80)), tp0)
	v.OnServiceAdd(svcRec("t1", "ns", "web", "10.0.0.2", port("http", 80)), tp1)
	v.OnServiceAdd(svcRec("t2", "ns", "web", "10.0.0.3", port("http", 80)), tp1)
	v.OnServiceAdd(svcRec("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)), tp1)
	s := NewSnapshot()
	v.Apply(s)
	has := func(n ServicePortName) bool { _, ok := s.Port(n); return ok }
	if !has(spn(tp0, "t1", "ns", "web", "http")) || has(spn(tp1, "t1", "ns", "web", "http")) {
		t.Fatal("t1 must be served from tp0 only")
	}
	if !has(spn(tp1, "t2", "ns", "web", "http")) || !has(spn(tp1, "system", "kube-system", "kube-dns", "dns")) {
		t.Fatal("unknown tenants and the system tenant are served from every TP")
	}
	// The tracker now says t1 lives in TP 1.
	tm.mu.Lock()
	tm.m["t1"] = tp1
	tm.mu.Unlock()
	v.TenantMoved("t1")
	c := v.Apply(s)
	if len(c.Services) != 2 || has(spn(tp0, "t1", "ns", "web", "http")) || !has(spn(tp1, "t1", "ns", "web", "http")) {
		t.Fatalf("after the move: %+v", c)
	}
}

func TestPartitionRemovalAndUnknownTPs(t *testing.T) {
	v := NewView([]int{tp0, tp1}, Options{})
	v.OnServiceAdd(svcRec("", "ns", "x", "10.0.0.3", port("p", 1)), tp2)
	if v.Stats().Dropped != 1 {
		t.Fatalf("event from an unserved TP: dropped=%d", v.Stats().Dropped)
	}
	for _, tp := range []int{tp0, tp1} {
		v.OnServiceAdd(svcRec("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)), tp)
		v.OnEndpointsAdd(epsRec("", "kube-system", "d", "kube-dns", "dns", 53, ready("192.168.0.1")...), tp)
	}
	s := NewSnapshot()
	v.Apply(s)
	v.SetPartitions([]int{tp0})
	c := v.Apply(s)
	if len(c.Services) != 1 || c.Services[0].TenantPartitionID != tp1 || s.Len() != 1 {
		t.Fatalf("after removing tp1: %+v, %d ports", c, s.Len())
	}
	v.OnServiceAdd(svcRec("", "ns", "late", "10.0.0.4", port("p", 1)), tp1)
	if v.Apply(s); s.Len() != 1 {
		t.Fatal("a removed TP's late event came back")
	}
	if got := v.Partitions(); !slices.Equal(got, []int{tp0}) {
		t.Fatalf("partitions %v", got)
	}
}

// TestSyncedNeedsEveryTP: synced means services and endpoints of every
// served TP, not the first TP to report (Arktos's proxier's rule).
func TestSyncedNeedsEveryTP(t *testing.T) {
	v := NewView([]int{tp0, tp1}, Options{})
	if v.Synced() {
		t.Fatal("synced at start")
	}
	v.OnServiceSynced(tp0)
	v.OnEndpointsSynced(tp0)
	if v.Synced() {
		t.Fatal("synced after the first TP")
	}
	v.OnServiceSynced(tp1)
	v.OnServiceSynced(tp2) // not served: changes nothing
	if v.Synced() {
		t.Fatal("synced before tp1's endpoints")
	}
	v.OnEndpointsSynced(tp1)
	if !v.Synced() {
		t.Fatal("not synced after both TPs")
	}
	// A new TP is waited for; a removed one no longer is.
	v.SetPartitions([]int{tp0, tp1, tp2})
	if v.Synced() {
		t.Fatal("synced while tp2 was added and has not synced")
	}
	v.RemovePartition(tp2)
	if !v.Synced() {
		t.Fatal("not synced after tp2 was removed")
	}
}

func TestBadInputIsSkipped(t *testing.T) {
	var logged []string
	v := NewView([]int{tp0}, Options{Logger: corelog.Funcs{Warning: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}})
	v.OnServiceAdd(nil, tp0)
	v.OnEndpointsAdd(nil, tp0)
	v.OnServiceDelete(nil, tp0)
	v.OnEndpointsDelete(nil, tp0)
	v.OnServiceAdd(svcRec("Bad_Tenant", "ns", "x", "10.0.0.1", port("p", 1)), tp0)
	v.OnServiceAdd(svcRec("", "", "nons", "10.0.0.1", port("p", 1)), tp0)
	v.OnServiceAdd(svcRec("", "ns", "y", "10.0.0.300", port("p", 1), port("q", 70000)), tp0)
	v.OnEndpointsAdd(epsRec("", "ns", "z", "y/z", "p", 1, ready("192.168.0.1")...), tp0)
	v.OnEndpointsAdd(epsRec("", "ns", "e", "y", "p", 0, ready("192.168.0.1")...), tp0)
	if got := v.Stats().Skipped; got != 7 {
		t.Errorf("skipped = %d, want 7 (nil service, nil endpoints, bad tenant, no namespace, bad IP and port, bad service name, bad port)", got)
	}
	if len(logged) != 7 || !strings.Contains(strings.Join(logged, "\n"), "10.0.0.300") {
		t.Errorf("log lines should name what was skipped: %q", logged)
	}
	if s := v.Snapshot(); s.Len() != 0 {
		t.Errorf("bad input produced %d ports", s.Len())
	}
}

func FuzzRecords(f *testing.F) {
	f.Add("10.0.0.1", "192.168.0.1", "p", int32(80), "kube-system", "t1", 0)
	f.Add("::1", "", "", int32(-1), "", "", -1)
	f.Fuzz(func(t *testing.T, cip, eip, pname string, p int32, ns, tenant string, tp int) {
		v := NewView([]int{tp}, Options{})
		svc := svcRec(tenant, ns, "s", cip, ServicePort{Name: pname, Port: p})
		svc.ClusterIPs = append(svc.ClusterIPs, eip)
		v.OnServiceAdd(svc, tp)
		v.OnEndpointsAdd(epsRec(tenant, ns, "e", "s", pname, p, ready(eip, cip)...), tp)
		s := v.Snapshot()
		for pi := range s.All() {
			if pi.Name.TenantPartitionID != tp || len(pi.ClusterIPs) == 0 || pi.Name.Tenant == "" {
				t.Fatalf("bad port %+v", pi)
			}
		}
	})
}

// TestManyEndpointsSorted: long endpoint lists (past the insertion sort)
// come sorted and without repeats too.
func TestManyEndpointsSorted(t *testing.T) {
	v := NewView([]int{tp0}, Options{})
	v.OnServiceAdd(svcRec("", "ns", "big", "10.0.0.1", port("p", 80)), tp0)
	var ips []string
	for i := 40; i > 0; i-- {
		ips = append(ips, fmt.Sprintf("192.168.0.%d", i), fmt.Sprintf("192.168.0.%d", i))
	}
	v.OnEndpointsAdd(epsRec("", "ns", "big", "big", "p", 8080, ready(ips...)...), tp0)
	got := endpointIPs(t, v.Snapshot(), spn(tp0, "system", "ns", "big", "p"))
	if len(got) != 40 || got[0] != "192.168.0.1:8080" || got[1] != "192.168.0.2:8080" || got[39] != "192.168.0.40:8080" {
		t.Fatalf("endpoints %v", got)
	}
}

// TestPartitionStats: per-TP figures follow adds, updates, deletes, an
// endpoints object that changes its service, and a TP's removal; a TP's
// synced flags are its own.
func TestPartitionStats(t *testing.T) {
	v := NewView([]int{tp1, tp0}, Options{})
	type fig struct{ svc, ep int }
	check := func(when string, want map[int]fig) {
		t.Helper()
		got := map[int]fig{}
		for _, p := range v.Stats().Partitions {
			got[p.TenantPartitionID] = fig{p.Services, p.Endpoints}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: per-TP (services, endpoints) %v, want %v", when, got, want)
		}
	}
	check("empty", map[int]fig{tp0: {}, tp1: {}})
	for _, tp := range []int{tp0, tp1} {
		v.OnServiceAdd(svcRec("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)), tp)
		v.OnEndpointsAdd(epsRec("", "kube-system", "kube-dns", "kube-dns", "dns", 53, ready("192.168.0.1")...), tp)
	}
	v.OnServiceAdd(svcRec("a", "ns", "web", "10.0.0.3", port("http", 80)), tp1)
	v.OnServiceUpdate(nil, svcRec("a", "ns", "web", "10.0.0.3", port("http", 81)), tp1)
	v.OnServiceAdd(svcRec("a", "ns", "web", "10.0.0.3", port("http", 81)), tp1) // a resync
	v.OnEndpointsAdd(epsRec("a", "ns", "web", "web", "http", 80, ready("192.168.0.2")...), tp1)
	v.OnEndpointsUpdate(nil, epsRec("a", "ns", "web", "web", "http", 80, ready("192.168.0.3")...), tp1)
	v.OnServiceAdd(svcRec("", "ns", "x", "10.0.0.5", port("p", 1)), tp2) // not served
	check("after adds", map[int]fig{tp0: {1, 1}, tp1: {2, 2}})
	// An endpoints slice that moves to another service counts once; one
	// that feeds no service does not count.
	v.OnEndpointsAdd(epsRec("a", "ns", "slice", "web", "http", 80, ready("192.168.0.4")...), tp1)
	v.OnEndpointsUpdate(nil, epsRec("a", "ns", "slice", "other", "http", 80, ready("192.168.0.4")...), tp1)
	check("slice moved", map[int]fig{tp0: {1, 1}, tp1: {2, 3}})
	v.OnEndpointsUpdate(nil, epsRec("a", "ns", "slice", "", "http", 80), tp1)
	check("slice feeds nothing", map[int]fig{tp0: {1, 1}, tp1: {2, 2}})
	v.OnServiceDelete(svcRec("a", "ns", "web", "10.0.0.3"), tp1)
	v.OnServiceDelete(svcRec("a", "ns", "web", "10.0.0.3"), tp1) // again: no change
	v.OnEndpointsDelete(epsRec("", "kube-system", "kube-dns", "kube-dns", "dns", 53), tp0)
	check("after deletes", map[int]fig{tp0: {1, 0}, tp1: {1, 2}})
	v.OnServiceSynced(tp1)
	v.OnEndpointsSynced(tp0)
	ps := v.Stats().Partitions
	if len(ps) != 2 || ps[0].TenantPartitionID != tp0 || ps[0].ServicesSynced || !ps[0].EndpointsSynced || !ps[1].ServicesSynced || ps[1].EndpointsSynced {
		t.Fatalf("synced flags by TP, in id order: %+v", ps)
	}
	v.RemovePartition(tp1)
	check("tp1 removed", map[int]fig{tp0: {1, 0}})
	v.SetPartitions([]int{tp0, tp1})
	check("tp1 back", map[int]fig{tp0: {1, 0}, tp1: {}})
}

package kubeproxy

import (
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

func TestServicePortNameString(t *testing.T) {
	cases := []struct {
		n    ServicePortName
		want string
	}{
		{spn("tp1", "system", "kube-system", "kube-dns", "dns"), "system_tp1/kube-system/kube-dns:dns"},
		{spn("tp2", "system", "kube-system", "kube-dns", "dns"), "system_tp2/kube-system/kube-dns:dns"},
		{spn("tp1", "t1", "default", "web", ""), "t1_tp1/default/web"},
		{spn("admin@tp3", "t2", "ns", "db", "pg"), "t2_admin@tp3/ns/db:pg"},
	}
	for _, tc := range cases {
		if got := tc.n.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestSameSystemServiceInTwoTPs is the heart of the issue: one name, two TPs,
// two services, each with only its own endpoints.
func TestSameSystemServiceInTwoTPs(t *testing.T) {
	v := NewView([]string{"tp1", "tp2"}, Options{})
	v.OnServiceAdd("tp1", svcObj("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)))
	v.OnServiceAdd("tp2", svcObj("system", "kube-system", "kube-dns", "10.1.0.10", port("dns", 53)))
	v.OnEndpointSliceAdd("tp1", sliceObj("", "kube-system", "kube-dns-a", "kube-dns", "dns", 5353, ready("192.168.1.1", "192.168.1.2")...))
	v.OnEndpointSliceAdd("tp2", sliceObj("", "kube-system", "kube-dns-a", "kube-dns", "dns", 5353, ready("192.168.2.1")...))

	s := v.Snapshot()
	if s.Len() != 2 || s.Services() != 2 {
		t.Fatalf("snapshot has %d ports in %d services, want 2 in 2", s.Len(), s.Services())
	}
	n1, n2 := spn("tp1", "system", "kube-system", "kube-dns", "dns"), spn("tp2", "system", "kube-system", "kube-dns", "dns")
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

// TestSliceNeverFeedsAnotherTP: a slice of TP2 names a service that exists
// only in TP1. TP1's service must not get it.
func TestSliceNeverFeedsAnotherTP(t *testing.T) {
	v := NewView([]string{"tp1", "tp2"}, Options{})
	v.OnServiceAdd("tp1", svcObj("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)))
	v.OnEndpointSliceAdd("tp2", sliceObj("", "kube-system", "x", "kube-dns", "dns", 53, ready("192.168.2.9")...))
	// Same TP, other tenant or namespace: also not this service.
	v.OnEndpointSliceAdd("tp1", sliceObj("t1", "kube-system", "y", "kube-dns", "dns", 53, ready("192.168.1.8")...))
	v.OnEndpointSliceAdd("tp1", sliceObj("", "default", "z", "kube-dns", "dns", 53, ready("192.168.1.7")...))
	s := v.Snapshot()
	n := spn("tp1", "system", "kube-system", "kube-dns", "dns")
	if eps := endpointIPs(t, s, n); len(eps) != 0 {
		t.Fatalf("%s got endpoints %v from elsewhere", n, eps)
	}
	if s.Len() != 1 {
		t.Fatalf("snapshot has %d ports, want 1: slices without a service serve nothing", s.Len())
	}
}

func TestPortsAndEndpoints(t *testing.T) {
	notReady := epSpec{ip: "192.168.0.3", ready: ptr(false)}
	cases := []struct {
		name   string
		svc    *corev1.Service
		slices []*discoveryv1.EndpointSlice
		want   map[string][]string // port name string -> endpoints
	}{
		{
			name:   "ready only, sorted, deduplicated across slices",
			svc:    svcObj("t1", "ns", "web", "10.0.0.1", port("http", 80)),
			slices: []*discoveryv1.EndpointSlice{sliceObj("t1", "ns", "a", "web", "http", 8080, epSpec{ip: "192.168.0.2"}, notReady), sliceObj("t1", "ns", "b", "web", "http", 8080, ready("192.168.0.1", "192.168.0.2")...)},
			want:   map[string][]string{"t1_tp1/ns/web:http": {"192.168.0.1:8080", "192.168.0.2:8080"}},
		},
		{
			name:   "ports match by name and protocol",
			svc:    svcObj("t1", "ns", "dns", "10.0.0.2", port("tcp", 53), udpPort("udp", 53)),
			slices: []*discoveryv1.EndpointSlice{sliceObj("t1", "ns", "a", "dns", "tcp", 5353, ready("192.168.0.1")...), sliceObj("t1", "ns", "b", "dns", "other", 1, ready("192.168.0.9")...)},
			want:   map[string][]string{"t1_tp1/ns/dns:tcp": {"192.168.0.1:5353"}, "t1_tp1/ns/dns:udp": nil},
		},
		{
			name: "headless serves nothing",
			svc:  svcObj("t1", "ns", "db", "None", port("pg", 5432)),
			want: map[string][]string{},
		},
		{
			name:   "invalid endpoint addresses are skipped",
			svc:    svcObj("t1", "ns", "web", "10.0.0.1", port("", 80)),
			slices: []*discoveryv1.EndpointSlice{sliceObj("t1", "ns", "a", "web", "", 8080, ready("not-an-ip", "fe80::1", "192.168.0.4")...)},
			want:   map[string][]string{"t1_tp1/ns/web": {"192.168.0.4:8080"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := NewView([]string{"tp1"}, Options{})
			v.OnServiceAdd("tp1", tc.svc)
			for _, es := range tc.slices {
				v.OnEndpointSliceAdd("tp1", es)
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

func TestApplyIsIncremental(t *testing.T) {
	v := NewView([]string{"tp1", "tp2"}, Options{})
	for _, tp := range []string{"tp1", "tp2"} {
		v.OnServiceAdd(tp, svcObj("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)))
		v.OnServiceAdd(tp, svcObj("", "default", "web", "10.0.0.20", port("http", 80)))
		v.OnEndpointSliceAdd(tp, sliceObj("", "kube-system", "d", "kube-dns", "dns", 53, ready("192.168.0.1")...))
	}
	s := NewSnapshot()
	if c := v.Apply(s); !c.Full || s.Len() != 4 {
		t.Fatalf("first Apply = %+v with %d ports, want a full one with 4", c, s.Len())
	}
	if c := v.Apply(s); c.Full || len(c.Services) != 0 {
		t.Fatalf("Apply without events = %+v, want nothing", c)
	}

	// An endpoint change in TP2 touches only TP2's kube-dns.
	v.OnEndpointSliceUpdate("tp2", nil, sliceObj("", "kube-system", "d", "kube-dns", "dns", 53, ready("192.168.0.1", "192.168.0.2")...))
	dns2 := tenancy.Key{Partition: "tp2", Tenant: "system", Namespace: "kube-system", Name: "kube-dns"}
	if c := v.Apply(s); c.Full || !slices.Equal(c.Services, []tenancy.Key{dns2}) {
		t.Fatalf("Apply = %+v, want only %v", c, dns2)
	}
	if got := endpointIPs(t, s, spn("tp1", "system", "kube-system", "kube-dns", "dns")); !slices.Equal(got, []string{"192.168.0.1:53"}) {
		t.Fatalf("tp1 kube-dns changed too: %v", got)
	}

	// An update that a proxy cannot see (labels) changes nothing.
	same := svcObj("", "default", "web", "10.0.0.20", port("http", 80))
	same.Labels = map[string]string{"x": "y"}
	v.OnServiceUpdate("tp1", nil, same)
	if c := v.Apply(s); len(c.Services) != 0 {
		t.Fatalf("invisible update produced %+v", c)
	}

	// Deleting TP1's web leaves TP2's.
	v.OnServiceDelete("tp1", same)
	web1 := tenancy.Key{Partition: "tp1", Tenant: "system", Namespace: "default", Name: "web"}
	if c := v.Apply(s); !slices.Equal(c.Services, []tenancy.Key{web1}) || s.Service(web1) != nil || s.Len() != 3 {
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

func TestSliceMovesBetweenServices(t *testing.T) {
	v := NewView([]string{"tp1"}, Options{})
	v.OnServiceAdd("tp1", svcObj("t1", "ns", "a", "10.0.0.1", port("p", 80)))
	v.OnServiceAdd("tp1", svcObj("t1", "ns", "b", "10.0.0.2", port("p", 80)))
	v.OnEndpointSliceAdd("tp1", sliceObj("t1", "ns", "s", "a", "p", 80, ready("192.168.0.1")...))
	s := NewSnapshot()
	v.Apply(s)
	v.OnEndpointSliceUpdate("tp1", nil, sliceObj("t1", "ns", "s", "b", "p", 80, ready("192.168.0.1")...))
	c := v.Apply(s)
	if len(c.Services) != 2 {
		t.Fatalf("changes %+v, want both services", c)
	}
	if a, b := endpointIPs(t, s, spn("tp1", "t1", "ns", "a", "p")), endpointIPs(t, s, spn("tp1", "t1", "ns", "b", "p")); len(a) != 0 || len(b) != 1 {
		t.Fatalf("a=%v b=%v", a, b)
	}
	// Losing the label detaches it.
	bare := sliceObj("t1", "ns", "s", "b", "p", 80, ready("192.168.0.1")...)
	delete(bare.Labels, discoveryv1.LabelServiceName)
	v.OnEndpointSliceUpdate("tp1", nil, bare)
	v.Apply(s)
	if b := endpointIPs(t, s, spn("tp1", "t1", "ns", "b", "p")); len(b) != 0 {
		t.Fatalf("unlabelled slice still feeds b: %v", b)
	}
}

// tenantMap is a fixed TenantPartitions answer, as pkg/tporigin's tracker
// gives at one moment.
type tenantMap struct {
	mu sync.Mutex
	m  map[string]string
}

func (t *tenantMap) PartitionOfTenant(tenant string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.m[tenant]
	return p, ok
}

func TestRegularTenantServedFromItsTP(t *testing.T) {
	tm := &tenantMap{m: map[string]string{"t1": "tp1"}}
	v := NewView([]string{"tp1", "tp2"}, Options{Tenants: tm})
	// A stray copy of t1's service in TP2, and t2, which the tracker does
	// not know yet.
	v.OnServiceAdd("tp1", svcObj("t1", "ns", "web", "10.0.0.1", port("http", 80)))
	v.OnServiceAdd("tp2", svcObj("t1", "ns", "web", "10.0.0.2", port("http", 80)))
	v.OnServiceAdd("tp2", svcObj("t2", "ns", "web", "10.0.0.3", port("http", 80)))
	v.OnServiceAdd("tp2", svcObj("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)))
	s := NewSnapshot()
	v.Apply(s)
	has := func(n ServicePortName) bool { _, ok := s.Port(n); return ok }
	if !has(spn("tp1", "t1", "ns", "web", "http")) || has(spn("tp2", "t1", "ns", "web", "http")) {
		t.Fatal("t1 must be served from tp1 only")
	}
	if !has(spn("tp2", "t2", "ns", "web", "http")) || !has(spn("tp2", "system", "kube-system", "kube-dns", "dns")) {
		t.Fatal("unknown tenants and the system tenant are served from every TP")
	}
	// The tracker now says t1 lives in tp2.
	tm.mu.Lock()
	tm.m["t1"] = "tp2"
	tm.mu.Unlock()
	v.TenantMoved("t1")
	c := v.Apply(s)
	if len(c.Services) != 2 || has(spn("tp1", "t1", "ns", "web", "http")) || !has(spn("tp2", "t1", "ns", "web", "http")) {
		t.Fatalf("after the move: %+v", c)
	}
}

func TestPartitionRemovalAndUnknownTPs(t *testing.T) {
	v := NewView([]string{"tp1", "tp2"}, Options{})
	v.OnServiceAdd("tp3", svcObj("", "ns", "x", "10.0.0.3", port("p", 1)))
	if v.Dropped() != 1 {
		t.Fatalf("event from an unserved TP: dropped=%d", v.Dropped())
	}
	for _, tp := range []string{"tp1", "tp2"} {
		v.OnServiceAdd(tp, svcObj("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)))
		v.OnEndpointSliceAdd(tp, sliceObj("", "kube-system", "d", "kube-dns", "dns", 53, ready("192.168.0.1")...))
	}
	s := NewSnapshot()
	v.Apply(s)
	v.SetPartitions([]string{"tp1"})
	c := v.Apply(s)
	if len(c.Services) != 1 || c.Services[0].Partition != "tp2" || s.Len() != 1 {
		t.Fatalf("after removing tp2: %+v, %d ports", c, s.Len())
	}
	v.OnServiceAdd("tp2", svcObj("", "ns", "late", "10.0.0.4", port("p", 1)))
	if v.Apply(s); s.Len() != 1 {
		t.Fatal("a removed TP's late event came back")
	}
}

func TestSyncedNeedsBoth(t *testing.T) {
	v := NewView([]string{"tp1"}, Options{})
	if v.Synced() {
		t.Fatal("synced at start")
	}
	v.OnServiceSynced()
	if v.Synced() {
		t.Fatal("synced before slices")
	}
	v.OnEndpointSlicesSynced()
	if !v.Synced() {
		t.Fatal("not synced after both")
	}
}

func TestBadInputIsSkipped(t *testing.T) {
	v := NewView([]string{"tp1"}, Options{})
	v.OnServiceAdd("tp1", nil)
	v.OnEndpointSliceAdd("tp1", nil)
	v.OnServiceDelete("tp1", nil)
	v.OnEndpointSliceDelete("tp1", nil)
	v.OnServiceAdd("tp1", svcObj("Bad_Tenant", "ns", "x", "10.0.0.1", port("p", 1)))
	v.OnServiceAdd("tp1", svcObj("", "ns", "y", "10.0.0.300", port("p", 1), port("q", 70000)))
	es := sliceObj("", "ns", "z", "y", "p", 1, ready("192.168.0.1")...)
	es.AddressType = discoveryv1.AddressTypeFQDN
	v.OnEndpointSliceAdd("tp1", es)
	if v.Skipped() != 4 {
		t.Errorf("skipped = %d, want 4 (nil service, nil slice, bad tenant, bad IP and port)", v.Skipped())
	}
	if s := v.Snapshot(); s.Len() != 0 {
		t.Errorf("bad input produced %d ports", s.Len())
	}
	if _, err := ServiceFromAPI("tp1", svcObj("", "ns", "y", "10.0.0.300", port("p", 1))); err == nil || !strings.Contains(err.Error(), "10.0.0.300") {
		t.Errorf("error should name the bad IP: %v", err)
	}
}

func FuzzRecords(f *testing.F) {
	f.Add("10.0.0.1", "192.168.0.1", "p", int32(80), "kube-system", "t1")
	f.Add("::1", "", "", int32(-1), "", "")
	f.Fuzz(func(t *testing.T, cip, eip, pname string, p int32, ns, tenant string) {
		v := NewView([]string{"tp"}, Options{})
		svc := svcObj(tenant, ns, "s", cip, corev1.ServicePort{Name: pname, Port: p})
		svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, eip)
		v.OnServiceAdd("tp", svc)
		v.OnEndpointSliceAdd("tp", sliceObj(tenant, ns, "e", "s", pname, p, ready(eip, cip)...))
		s := v.Snapshot()
		for pi := range s.All() {
			if pi.Name.Service.Partition != "tp" || len(pi.ClusterIPs) == 0 {
				t.Fatalf("bad port %+v", pi)
			}
		}
	})
}

func endpointsObj(tenant, ns, name string, subsets ...corev1.EndpointSubset) *corev1.Endpoints {
	e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Subsets: subsets}
	if tenant != "" {
		tenancy.SetTenant(e, tenant)
	}
	return e
}

func subset(ports []corev1.EndpointPort, ready []string, notReady ...string) corev1.EndpointSubset {
	ss := corev1.EndpointSubset{Ports: ports}
	for _, ip := range ready {
		ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: ip})
	}
	for _, ip := range notReady {
		ss.NotReadyAddresses = append(ss.NotReadyAddresses, corev1.EndpointAddress{IP: ip})
	}
	return ss
}

// TestEndpoints: core/v1 Endpoints, as Arktos serves them, feed the service
// of their name in their own TP: each subset with its own ports, not-ready
// addresses kept out, a subset that goes away takes its endpoints along.
func TestEndpoints(t *testing.T) {
	v := NewView([]string{"tp1", "tp2"}, Options{})
	v.OnServiceAdd("tp1", svcObj("acme", "web", "api", "10.0.0.20", port("http", 80), port("admin", 81)))
	v.OnServiceAdd("tp2", svcObj("acme", "web", "api", "10.1.0.20", port("http", 80)))
	http := []corev1.EndpointPort{{Name: "http", Port: 8080}}
	both := []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}, {Name: "admin", Port: 9090}}
	v.OnEndpointsAdd("tp1", endpointsObj("acme", "web", "api",
		subset(http, []string{"192.168.1.1"}, "192.168.1.9"),
		subset(both, []string{"192.168.1.2"})))
	v.OnEndpointsAdd("tp2", endpointsObj("acme", "web", "api", subset(http, []string{"192.168.2.1"})))

	s := v.Snapshot()
	httpName, adminName := spn("tp1", "acme", "web", "api", "http"), spn("tp1", "acme", "web", "api", "admin")
	if got, want := endpointIPs(t, s, httpName), []string{"192.168.1.1:8080", "192.168.1.2:8080"}; !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v (ready addresses of both subsets)", httpName, got, want)
	}
	if got, want := endpointIPs(t, s, adminName), []string{"192.168.1.2:9090"}; !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v (only the subset with the port)", adminName, got, want)
	}
	if got, want := endpointIPs(t, s, spn("tp2", "acme", "web", "api", "http")), []string{"192.168.2.1:8080"}; !slices.Equal(got, want) {
		t.Errorf("tp2 = %v, want %v", got, want)
	}

	// The second subset goes: its endpoints with it.
	v.OnEndpointsUpdate("tp1", nil, endpointsObj("acme", "web", "api", subset(http, []string{"192.168.1.1"})))
	s = v.Snapshot()
	if got, want := endpointIPs(t, s, httpName), []string{"192.168.1.1:8080"}; !slices.Equal(got, want) {
		t.Errorf("after the update %s = %v, want %v", httpName, got, want)
	}
	if got := endpointIPs(t, s, adminName); len(got) != 0 {
		t.Errorf("after the update %s = %v, want none", adminName, got)
	}

	// Deleting tp1's endpoints leaves tp2's.
	v.OnEndpointsDelete("tp1", endpointsObj("acme", "web", "api"))
	s = v.Snapshot()
	if got := endpointIPs(t, s, httpName); len(got) != 0 {
		t.Errorf("after the delete %s = %v", httpName, got)
	}
	if got := endpointIPs(t, s, spn("tp2", "acme", "web", "api", "http")); len(got) != 1 {
		t.Errorf("tp1's delete touched tp2: %v", got)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.subsets) != 1 {
		t.Errorf("subset bookkeeping holds %d Endpoints, want 1 (tp2's)", len(v.subsets))
	}
}

func TestEndpointsFromAPI(t *testing.T) {
	cases := []struct {
		name    string
		ep      *corev1.Endpoints
		records int
		ready   int
		wantErr string
	}{
		{"empty", endpointsObj("", "ns", "svc"), 0, 0, ""},
		{"one subset", endpointsObj("", "ns", "svc", subset([]corev1.EndpointPort{{Port: 80}}, []string{"10.0.0.1", "10.0.0.2"}, "10.0.0.3")), 1, 2, ""},
		{"bad address and port skipped", endpointsObj("t1", "ns", "svc", subset([]corev1.EndpointPort{{Port: 80}, {Port: 0}}, []string{"10.0.0.1", "nope"})), 1, 1, "skipped invalid"},
		{"bad tenant", endpointsObj("Not_A_Tenant", "ns", "svc"), 0, 0, "DNS-1123"},
	}
	for _, tc := range cases {
		recs, err := EndpointsFromAPI("tp1", tc.ep)
		if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
			continue
		}
		if len(recs) != tc.records {
			t.Errorf("%s: %d records, want %d", tc.name, len(recs), tc.records)
			continue
		}
		ready := 0
		for _, r := range recs {
			if r.Service != "svc" || r.Key.Partition != "tp1" || !strings.HasPrefix(r.Key.Name, "svc.") {
				t.Errorf("%s: record %+v", tc.name, r)
			}
			for _, e := range r.Endpoints {
				if e.Ready {
					ready++
				}
			}
		}
		if ready != tc.ready {
			t.Errorf("%s: %d ready endpoints, want %d", tc.name, ready, tc.ready)
		}
	}
}

package index

import (
	"net/netip"
	"slices"
	"testing"
	"unsafe"
)

// TestServiceSpecKeepsWhatItWasGiven: however a spec stores a service's
// cluster IPs, ExternalName and ports, it gives back what the Service said.
func TestServiceSpecKeepsWhatItWasGiven(t *testing.T) {
	http := &[]Port{{Name: "http", Protocol: "TCP", Port: 80}}
	for _, s := range []Service{
		{Name: "one", ClusterIPs: []netip.Addr{a("10.0.0.1")}},
		{Name: "dual", ClusterIPs: []netip.Addr{a("10.0.0.2"), a("fd00::2")}},
		{Name: "v6", ClusterIPs: []netip.Addr{a("fd00::3")}},
		{Name: "headless", Type: Headless},
		{Name: "ext", Type: ExternalName, ExternalName: "example.com."},
	} {
		spec := newServiceSpec(&s, http)
		if spec.Name != s.Name || spec.Type != s.Type || spec.ExternalName() != s.ExternalName ||
			!slices.Equal(spec.ClusterIPs(), s.ClusterIPs) || !slices.Equal(spec.Ports(), *http) {
			t.Errorf("%s: spec gives %v %v %q %v", s.Name, spec.Type, spec.ClusterIPs(), spec.ExternalName(), spec.Ports())
		}
		if len(s.ClusterIPs) == 0 && spec.ClusterIPs() != nil {
			t.Errorf("%s: ClusterIPs = %v, want nil", s.Name, spec.ClusterIPs())
		}
	}
	if (&ServiceSpec{}).Ports() != nil {
		t.Error("a spec without ports gives some")
	}
}

// TestServiceViewSize: a view is in the allocator's 96-byte class. It was
// 128 bytes when the spec held its cluster IPs, ExternalName and ports as
// slices and a string; at 600k objects that is 8 MB of live heap.
func TestServiceViewSize(t *testing.T) {
	if n := unsafe.Sizeof(ServiceView{}); n > 96 {
		t.Fatalf("a ServiceView takes %d bytes, want 96 or fewer", n)
	}
}

// TestEndpointHostLabels: an endpoint without a hostname of its own is
// named by its address's label, made when asked for, and compares as that
// label against names and other endpoints, without allocating.
func TestEndpointHostLabels(t *testing.T) {
	view := func(addr netip.Addr, host string) *EndpointView {
		return &EndpointView{addr: keyOf(addr), meta: &endpointMeta{hostname: host}}
	}
	v4, v4b, v6 := a("10.244.0.2"), a("10.244.0.3"), a("fd00::1:2")
	own, same := view(v4b, "db-0"), view(v4, "db-0")
	spelled := view(v4b, "10-244-0-2") // names itself as v4's label
	for _, c := range []struct {
		ep         *EndpointView
		label, own string
	}{
		{view(v4, ""), "10-244-0-2", ""},
		{view(v6, ""), "fd00--1-2", ""},
		{view(a("::"), ""), "--", ""},
		{own, "db-0", "db-0"},
	} {
		if got := c.ep.Host(); got != c.label {
			t.Errorf("%v: Host() = %q, want %q", c.ep.Addr(), got, c.label)
		}
		if got := string(c.ep.AppendHost([]byte("x."))); got != "x."+c.label {
			t.Errorf("%v: AppendHost = %q", c.ep.Addr(), got)
		}
		if got := c.ep.Hostname(); got != c.own {
			t.Errorf("%v: Hostname() = %q, want %q", c.ep.Addr(), got, c.own)
		}
		if !c.ep.HostIs([]byte(c.label)) || c.ep.HostIs([]byte(c.label+"x")) || c.ep.HostIs(nil) {
			t.Errorf("%v: HostIs wrong around %q", c.ep.Addr(), c.label)
		}
		if n := testing.AllocsPerRun(10, func() { c.ep.HostIs([]byte(c.label)) }); n != 0 {
			t.Errorf("%v: HostIs allocates %v times", c.ep.Addr(), n)
		}
	}
	plain, plainB := view(v4, ""), view(v4b, "")
	for _, c := range []struct {
		x, y *EndpointView
		want bool
	}{
		{plain, view(v4, ""), true},
		{plain, plainB, false},
		{own, same, true},
		{own, plain, false},
		{spelled, plain, true},
		{plain, spelled, true},
		{spelled, plainB, false},
	} {
		if got := c.x.SameHost(c.y); got != c.want {
			t.Errorf("SameHost(%q, %q) = %v, want %v", c.x.Host(), c.y.Host(), got, c.want)
		}
	}
	if n := testing.AllocsPerRun(10, func() { spelled.SameHost(plain) }); n != 0 {
		t.Errorf("SameHost allocates %v times", n)
	}
}

// TestEndpointViewAddr: a view gives back the address it was made with,
// IPv4 as IPv4.
func TestEndpointViewAddr(t *testing.T) {
	for _, s := range []string{"10.244.0.2", "0.0.0.0", "255.255.255.255", "fd00::1:2", "::", "::1", "2001:db8::ffff:1"} {
		v := EndpointView{addr: keyOf(a(s)), meta: &endpointMeta{}}
		if got := v.Addr(); got != a(s) {
			t.Errorf("%s: Addr() = %v", s, got)
		}
	}
}

// TestEndpointViewSize: a view is 24 bytes; at 1.5M objects there are
// 1.25M endpoints, and every 8 bytes of a view is 10 MB.
func TestEndpointViewSize(t *testing.T) {
	if n := unsafe.Sizeof(EndpointView{}); n > 24 {
		t.Fatalf("an EndpointView takes %d bytes, want 24 or fewer", n)
	}
}

// TestEndpointMetaShared: endpoints of equal ports and no hostname share
// one meta, across slices; one with a hostname has its own.
func TestEndpointMetaShared(t *testing.T) {
	var pt portTable
	http := []Port{{Name: "http", Protocol: "TCP", Port: 80}}
	x := endpointViews(&EndpointSlice{Ports: http, Endpoints: []Endpoint{{Addrs: []netip.Addr{a("10.0.0.1"), a("10.0.0.2")}}}}, &pt)
	y := endpointViews(&EndpointSlice{Ports: []Port{{Name: "http", Protocol: "TCP", Port: 80}},
		Endpoints: []Endpoint{{Addrs: []netip.Addr{a("10.0.0.3")}}, {Addrs: []netip.Addr{a("10.0.0.4")}, Hostname: "db-0"}}}, &pt)
	if x[0].meta != x[1].meta || x[0].meta != y[0].meta {
		t.Error("endpoints of equal ports do not share their meta")
	}
	if y[1].meta == y[0].meta || y[1].Hostname() != "db-0" || y[1].meta.ports != y[0].meta.ports {
		t.Errorf("the endpoint with a hostname: meta %+v", *y[1].meta)
	}
	if !slices.Equal(y[0].Ports(), http) {
		t.Errorf("ports %v", y[0].Ports())
	}
	none := endpointViews(&EndpointSlice{Endpoints: []Endpoint{{Addrs: []netip.Addr{a("10.0.0.5")}}}}, &pt)
	if none[0].Ports() != nil || none[0].Hostname() != "" {
		t.Errorf("an endpoint of no ports: %v %q", none[0].Ports(), none[0].Hostname())
	}
}

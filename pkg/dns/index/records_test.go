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
	host := func(h string) *string { return &h }
	v4, v4b, v6 := a("10.244.0.2"), a("10.244.0.3"), a("fd00::1:2")
	own := &EndpointView{Addr: v4b, hostname: host("db-0")}
	same := &EndpointView{Addr: v4, hostname: host("db-0")}
	spelled := &EndpointView{Addr: v4b, hostname: host("10-244-0-2")} // names itself as v4's label
	for _, c := range []struct {
		ep         *EndpointView
		label, own string
	}{
		{&EndpointView{Addr: v4}, "10-244-0-2", ""},
		{&EndpointView{Addr: v6}, "fd00--1-2", ""},
		{&EndpointView{Addr: a("::ffff:10.0.0.1")}, "--ffff-10-0-0-1", ""},
		{own, "db-0", "db-0"},
	} {
		if got := c.ep.Host(); got != c.label {
			t.Errorf("%v: Host() = %q, want %q", c.ep.Addr, got, c.label)
		}
		if got := string(c.ep.AppendHost([]byte("x."))); got != "x."+c.label {
			t.Errorf("%v: AppendHost = %q", c.ep.Addr, got)
		}
		if got := c.ep.Hostname(); got != c.own {
			t.Errorf("%v: Hostname() = %q, want %q", c.ep.Addr, got, c.own)
		}
		if !c.ep.HostIs([]byte(c.label)) || c.ep.HostIs([]byte(c.label+"x")) || c.ep.HostIs(nil) {
			t.Errorf("%v: HostIs wrong around %q", c.ep.Addr, c.label)
		}
		if n := testing.AllocsPerRun(10, func() { c.ep.HostIs([]byte(c.label)) }); n != 0 {
			t.Errorf("%v: HostIs allocates %v times", c.ep.Addr, n)
		}
	}
	plain, plainB := &EndpointView{Addr: v4}, &EndpointView{Addr: v4b}
	for _, c := range []struct {
		x, y *EndpointView
		want bool
	}{
		{plain, &EndpointView{Addr: v4}, true},
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

// TestEndpointViewSize: a view is 40 bytes; 1.25M endpoints at 1.5M
// objects make every 8 bytes 10 MB.
func TestEndpointViewSize(t *testing.T) {
	if n := unsafe.Sizeof(EndpointView{}); n > 40 {
		t.Fatalf("an EndpointView takes %d bytes, want 40 or fewer", n)
	}
}

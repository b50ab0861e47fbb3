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

package index

import (
	"fmt"
	"net/netip"
	"testing"
)

// BenchmarkEndpointsChange is the Builder's side of a watched Endpoints
// change: a service of 10 endpoint addresses (fake-tp --generate's shape)
// in a namespace of 1,000 such services gets one address replaced, and the
// change is published.
func BenchmarkEndpointsChange(b *testing.B) {
	const services, addrs = 1000, 10
	bl := NewBuilder(Options{Partitions: []string{"tp1"}})
	slice := func(svc, first int) *EndpointSlice {
		e := &EndpointSlice{Tenant: "system", Namespace: "ns", Name: fmt.Sprintf("svc-%d", svc),
			Ports: []Port{{Name: "http", Protocol: "TCP", Port: 8080}}}
		e.Service = e.Name
		for k := range addrs {
			n := first + k
			e.Endpoints = append(e.Endpoints, Endpoint{Addrs: []netip.Addr{netip.AddrFrom4([4]byte{10, 244, byte(n >> 8), byte(n)})}})
		}
		return e
	}
	for i := range services {
		bl.SetService(0, &Service{Tenant: "system", Namespace: "ns", Name: fmt.Sprintf("svc-%d", i), Type: Headless,
			Ports: []Port{{Name: "http", Protocol: "TCP", Port: 80}}})
		bl.SetEndpointSlice(0, slice(i, i*addrs))
	}
	bl.Publish()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		svc := i % services
		bl.SetEndpointSlice(0, slice(svc, svc*addrs+(i/services)%2))
		bl.Publish()
	}
}

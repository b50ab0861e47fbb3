/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kubeproxy

import (
	"sort"

	"github.com/tpkit-dev/tpkit/pkg/ipaddr"
)

// PortInfo is one service port as a proxier serves it: the virtual
// addresses, and the ready endpoints of the service's own TP. It is
// immutable: a newer state comes as a new PortInfo.
type PortInfo struct {
	Name       ServicePortName
	ClusterIPs []ipaddr.Addr
	Port       int32
	// Protocol is "TCP", "UDP" or "SCTP".
	Protocol string
	// Endpoints are the ready endpoints, sorted by address and port, without
	// duplicates.
	Endpoints []EndpointAddr
}

// EndpointAddr is one ready backend of a service port.
type EndpointAddr struct {
	IP       ipaddr.Addr
	Port     int32
	NodeName string
}

// AddrPort returns the endpoint as an address and port; its String is
// Arktos's endpoint string ("ip:port", "[ip6]:port").
func (e EndpointAddr) AddrPort() ipaddr.AddrPort { return ipaddr.AddrPortFrom(e.IP, uint16(e.Port)) }

func (p *PortInfo) equal(q *PortInfo) bool {
	if p.Name != q.Name || p.Port != q.Port || p.Protocol != q.Protocol ||
		len(p.ClusterIPs) != len(q.ClusterIPs) || len(p.Endpoints) != len(q.Endpoints) {
		return false
	}
	for i := range p.ClusterIPs {
		if p.ClusterIPs[i] != q.ClusterIPs[i] {
			return false
		}
	}
	for i := range p.Endpoints {
		if p.Endpoints[i] != q.Endpoints[i] {
			return false
		}
	}
	return true
}

// Snapshot maps service ports to their ready endpoints: the answer of the
// endpoint filter. A proxier owns its Snapshot; View.Apply updates it in
// place and says which services changed, so reading it while Apply runs is
// a data race. View.Snapshot returns a fresh one that nobody else holds.
type Snapshot struct {
	ports     map[ServicePortName]*PortInfo
	byService map[ServiceName][]*PortInfo
	// view is the view this snapshot follows; see View.Apply.
	view *View
}

// NewSnapshot returns an empty snapshot, for View.Apply to fill.
func NewSnapshot() *Snapshot {
	return &Snapshot{ports: map[ServicePortName]*PortInfo{}, byService: map[ServiceName][]*PortInfo{}}
}

// Len is the number of service ports.
func (s *Snapshot) Len() int { return len(s.ports) }

// Services is the number of services with at least one served port.
func (s *Snapshot) Services() int { return len(s.byService) }

// Port returns one service port.
func (s *Snapshot) Port(name ServicePortName) (*PortInfo, bool) {
	p, ok := s.ports[name]
	return p, ok
}

// Service returns the served ports of one service, sorted by port name; nil
// when the service is not served.
func (s *Snapshot) Service(name ServiceName) []*PortInfo { return s.byService[name] }

// Endpoints returns the ready endpoints of one service port: only those of
// the port's own TP, tenant, namespace and service.
func (s *Snapshot) Endpoints(name ServicePortName) []EndpointAddr {
	if p, ok := s.ports[name]; ok {
		return p.Endpoints
	}
	return nil
}

// All iterates over every service port, in no particular order. It is an
// iterator in the shape of Go 1.23's iter.Seq, spelled out so the package
// builds with older Go: `for p := range s.All()` works from Go 1.23, and
// older code calls s.All()(func(p *PortInfo) bool { ...; return true }).
func (s *Snapshot) All() func(yield func(*PortInfo) bool) {
	return func(yield func(*PortInfo) bool) {
		for _, p := range s.ports {
			if !yield(p) {
				return
			}
		}
	}
}

// ServiceNames iterates over the names of the served services, in no
// particular order; an iterator like All.
func (s *Snapshot) ServiceNames() func(yield func(ServiceName) bool) {
	return func(yield func(ServiceName) bool) {
		for k := range s.byService {
			if !yield(k) {
				return
			}
		}
	}
}

// set replaces the ports of one service and reports whether anything a
// proxier serves changed.
func (s *Snapshot) set(name ServiceName, ports []*PortInfo) bool {
	old := s.byService[name]
	if equalPorts(old, ports) {
		return false
	}
	for _, p := range old {
		delete(s.ports, p.Name)
	}
	if len(ports) == 0 {
		delete(s.byService, name)
		return true
	}
	for _, p := range ports {
		s.ports[p.Name] = p
	}
	s.byService[name] = ports
	return true
}

func equalPorts(a, b []*PortInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].equal(b[i]) {
			return false
		}
	}
	return true
}

func (s *Snapshot) reset() {
	for k := range s.ports {
		delete(s.ports, k)
	}
	for k := range s.byService {
		delete(s.byService, k)
	}
}

// buildPorts computes the served ports of svc from the endpoints that name
// it, which the view keeps per service name, so they are of svc's own TP,
// tenant and namespace. A service port takes the ready endpoints whose port
// has its name and protocol. Fed by one group, as a core/v1 Endpoints feeds
// its service, a port shares the group's slice: the view and the snapshot
// then hold its endpoints once.
func buildPorts(svc *service, sets []*endpointSet) []*PortInfo {
	if svc == nil || len(svc.clusterIPs) == 0 || len(svc.ports) == 0 {
		return nil
	}
	out := make([]*PortInfo, 0, len(svc.ports))
	for _, sp := range svc.ports {
		pi := &PortInfo{
			Name:       ServicePortName{ServiceName: svc.name, Port: sp.Name},
			ClusterIPs: svc.clusterIPs,
			Port:       sp.Port,
			Protocol:   sp.Protocol,
		}
		merged := false
		for _, set := range sets {
			for i := range set.groups {
				g := &set.groups[i]
				if g.portName != sp.Name || g.protocol != sp.Protocol || len(g.ready) == 0 {
					continue
				}
				if pi.Endpoints == nil {
					pi.Endpoints = g.ready
					continue
				}
				if !merged {
					// A second group: copy, so that the shared one stays
					// as it is.
					pi.Endpoints = append(make([]EndpointAddr, 0, len(pi.Endpoints)+len(g.ready)), pi.Endpoints...)
					merged = true
				}
				pi.Endpoints = append(pi.Endpoints, g.ready...)
			}
		}
		if merged {
			// One endpoint may sit in two objects while it moves between
			// them (slices).
			pi.Endpoints = sortedEndpoints(pi.Endpoints)
		}
		out = append(out, pi)
	}
	if len(out) > 1 {
		sortPorts(out)
	}
	// Port names are unique in a valid service; keep the first of a
	// duplicate so that names stay unique in the snapshot.
	n := 1
	for i := 1; i < len(out); i++ {
		if out[i].Name != out[n-1].Name {
			out[n] = out[i]
			n++
		}
	}
	return out[:n]
}

// sortEndpoints sorts by address, port and node. Most ports have a few
// endpoints: an insertion sort handles those without the allocations of
// sort.Slice; sort.Sort takes the long lists.
func sortEndpoints(eps []EndpointAddr) {
	if len(eps) > 12 {
		sort.Sort(byEndpoint(eps))
		return
	}
	for i := 1; i < len(eps); i++ {
		for j := i; j > 0 && lessEndpoint(eps[j], eps[j-1]); j-- {
			eps[j], eps[j-1] = eps[j-1], eps[j]
		}
	}
}

type byEndpoint []EndpointAddr

func (b byEndpoint) Len() int           { return len(b) }
func (b byEndpoint) Less(i, j int) bool { return lessEndpoint(b[i], b[j]) }
func (b byEndpoint) Swap(i, j int)      { b[i], b[j] = b[j], b[i] }

func lessEndpoint(a, b EndpointAddr) bool {
	if c := a.IP.Compare(b.IP); c != 0 {
		return c < 0
	}
	if a.Port != b.Port {
		return a.Port < b.Port
	}
	return a.NodeName < b.NodeName
}

// sortPorts sorts by port name, then protocol; a service has few ports.
func sortPorts(ps []*PortInfo) {
	less := func(a, b *PortInfo) bool {
		if a.Name.Port != b.Name.Port {
			return a.Name.Port < b.Name.Port
		}
		return a.Protocol < b.Protocol
	}
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && less(ps[j], ps[j-1]); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// compactEndpoints drops repeats of an address and port from sorted eps.
func compactEndpoints(eps []EndpointAddr) []EndpointAddr {
	n := 1
	for i := 1; i < len(eps); i++ {
		if eps[i].IP != eps[n-1].IP || eps[i].Port != eps[n-1].Port {
			eps[n] = eps[i]
			n++
		}
	}
	return eps[:n]
}

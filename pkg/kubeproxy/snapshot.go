package kubeproxy

import (
	"cmp"
	"iter"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// PortInfo is one service port as a proxier serves it: the virtual
// addresses, and the ready endpoints of the service's own TP. It is
// immutable: a newer state comes as a new PortInfo.
type PortInfo struct {
	Name       ServicePortName
	ClusterIPs []netip.Addr
	Port       int32
	Protocol   corev1.Protocol
	// Endpoints are the ready endpoints, sorted by address and port, without
	// duplicates.
	Endpoints []EndpointAddr
}

// EndpointAddr is one ready backend of a service port.
type EndpointAddr struct {
	IP       netip.Addr
	Port     int32
	NodeName string
}

// AddrPort returns the endpoint as an address and port.
func (e EndpointAddr) AddrPort() netip.AddrPort { return netip.AddrPortFrom(e.IP, uint16(e.Port)) }

func (p *PortInfo) equal(q *PortInfo) bool {
	return p.Name == q.Name && p.Port == q.Port && p.Protocol == q.Protocol &&
		slices.Equal(p.ClusterIPs, q.ClusterIPs) && slices.Equal(p.Endpoints, q.Endpoints)
}

// Snapshot maps service ports to their ready endpoints. A proxier owns its
// Snapshot; View.Apply updates it in place and says which services changed,
// so reading it while Apply runs is a data race. View.Snapshot returns a
// fresh one that nobody else holds.
type Snapshot struct {
	ports     map[ServicePortName]*PortInfo
	byService map[tenancy.Key][]*PortInfo
	// view is the view this snapshot follows; see View.Apply.
	view *View
}

// NewSnapshot returns an empty snapshot, for View.Apply to fill.
func NewSnapshot() *Snapshot {
	return &Snapshot{ports: map[ServicePortName]*PortInfo{}, byService: map[tenancy.Key][]*PortInfo{}}
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

// Service returns the served ports of one service, sorted by name and
// protocol; nil when the service is not served.
func (s *Snapshot) Service(key tenancy.Key) []*PortInfo { return s.byService[key] }

// Endpoints returns the ready endpoints of one service port.
func (s *Snapshot) Endpoints(name ServicePortName) []EndpointAddr {
	if p, ok := s.ports[name]; ok {
		return p.Endpoints
	}
	return nil
}

// All iterates over every service port, in no particular order.
func (s *Snapshot) All() iter.Seq[*PortInfo] {
	return func(yield func(*PortInfo) bool) {
		for _, p := range s.ports {
			if !yield(p) {
				return
			}
		}
	}
}

// ServiceKeys iterates over the keys of the served services, in no
// particular order.
func (s *Snapshot) ServiceKeys() iter.Seq[tenancy.Key] {
	return func(yield func(tenancy.Key) bool) {
		for k := range s.byService {
			if !yield(k) {
				return
			}
		}
	}
}

// set replaces the ports of one service and reports whether anything a
// proxier serves changed.
func (s *Snapshot) set(key tenancy.Key, ports []*PortInfo) bool {
	old := s.byService[key]
	if slices.EqualFunc(old, ports, (*PortInfo).equal) {
		return false
	}
	for _, p := range old {
		delete(s.ports, p.Name)
	}
	if len(ports) == 0 {
		delete(s.byService, key)
		return true
	}
	for _, p := range ports {
		s.ports[p.Name] = p
	}
	s.byService[key] = ports
	return true
}

func (s *Snapshot) reset() {
	clear(s.ports)
	clear(s.byService)
}

// buildPorts computes the served ports of svc from the slices of the same
// service, which the caller has already restricted to svc's TP, tenant and
// namespace.
func buildPorts(svc *Service, slices_ map[string]*EndpointSlice) []*PortInfo {
	if svc == nil || len(svc.ClusterIPs) == 0 || len(svc.Ports) == 0 {
		return nil
	}
	out := make([]*PortInfo, 0, len(svc.Ports))
	for _, sp := range svc.Ports {
		pi := &PortInfo{
			Name:       ServicePortName{Service: svc.Key, Port: sp.Name, Protocol: sp.Protocol},
			ClusterIPs: svc.ClusterIPs,
			Port:       sp.Port,
			Protocol:   sp.Protocol,
		}
		for _, es := range slices_ {
			for _, ep := range es.Ports {
				if ep.Name != sp.Name || ep.Protocol != sp.Protocol {
					continue
				}
				for _, e := range es.Endpoints {
					if e.Ready {
						pi.Endpoints = append(pi.Endpoints, EndpointAddr{IP: e.IP, Port: ep.Port, NodeName: e.NodeName})
					}
				}
			}
		}
		if len(pi.Endpoints) > 1 {
			slices.SortFunc(pi.Endpoints, compareEndpoint)
			// One endpoint may sit in two slices while it moves between them.
			pi.Endpoints = slices.CompactFunc(pi.Endpoints, func(a, b EndpointAddr) bool { return a.IP == b.IP && a.Port == b.Port })
		}
		out = append(out, pi)
	}
	slices.SortFunc(out, func(a, b *PortInfo) int {
		return cmp.Or(cmp.Compare(a.Name.Port, b.Name.Port), cmp.Compare(a.Protocol, b.Protocol))
	})
	// Two ports with the same name and protocol are invalid in the API; keep
	// the first so names stay unique.
	out = slices.CompactFunc(out, func(a, b *PortInfo) bool { return a.Name == b.Name })
	return out
}

func compareEndpoint(a, b EndpointAddr) int {
	return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.Port, b.Port), cmp.Compare(a.NodeName, b.NodeName))
}

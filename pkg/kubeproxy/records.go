package kubeproxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Service is the part of a v1.Service a proxy needs, with its TP. Records
// are immutable once built: the view replaces them, never edits them.
type Service struct {
	// Key is {TP, tenant, namespace, name}.
	Key tenancy.Key
	UID types.UID
	// ClusterIPs are the service's virtual IPs; empty for headless and
	// ExternalName services, which a proxy does not serve.
	ClusterIPs []netip.Addr
	Ports      []ServicePort
}

// ServicePort is one port of a Service.
type ServicePort struct {
	// Name is the port's name; "" is allowed for a single-port service.
	Name     string
	Protocol corev1.Protocol
	Port     int32
}

// EndpointSlice is the part of a discovery/v1 EndpointSlice a proxy needs,
// with its TP.
type EndpointSlice struct {
	// Key is the slice's own key {TP, tenant, namespace, slice name}.
	Key tenancy.Key
	// Service is the name of the service the slice belongs to, from the
	// kubernetes.io/service-name label, in the slice's TP, tenant and
	// namespace.
	Service   string
	Ports     []EndpointPort
	Endpoints []Endpoint
}

// ServiceKey is the key of the service the slice feeds: same TP, tenant and
// namespace as the slice.
func (s *EndpointSlice) ServiceKey() tenancy.Key {
	k := s.Key
	k.Name = s.Service
	return k
}

// EndpointPort is one port of an EndpointSlice.
type EndpointPort struct {
	Name     string
	Protocol corev1.Protocol
	Port     int32
}

// Endpoint is one backend address of an EndpointSlice.
type Endpoint struct {
	IP netip.Addr
	// Ready follows the EndpointSlice condition; an unset condition means
	// ready, as the API documents.
	Ready    bool
	NodeName string
}

// ServiceFromAPI turns svc, seen in TP tp, into a record. Unparsable cluster
// IPs are skipped and reported in the error, which is informational: the
// record is still usable. It returns a nil record only when svc cannot be
// keyed at all.
func ServiceFromAPI(tp string, svc *corev1.Service) (*Service, error) {
	if svc == nil {
		return nil, fmt.Errorf("nil service")
	}
	key := keyIn(tp, svc)
	if err := key.Validate(); err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	out := &Service{Key: key, UID: svc.UID}
	var bad []string
	if svc.Spec.Type != corev1.ServiceTypeExternalName {
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != "" {
			ips = []string{svc.Spec.ClusterIP}
		}
		for _, s := range ips {
			if s == "" || s == corev1.ClusterIPNone {
				continue
			}
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" {
				bad = append(bad, s)
				continue
			}
			out.ClusterIPs = append(out.ClusterIPs, a.Unmap())
		}
	}
	if len(svc.Spec.Ports) > 0 {
		out.Ports = make([]ServicePort, 0, len(svc.Spec.Ports))
	}
	for _, p := range svc.Spec.Ports {
		if p.Port <= 0 || p.Port > 65535 {
			bad = append(bad, fmt.Sprintf("port %q=%d", p.Name, p.Port))
			continue
		}
		out.Ports = append(out.Ports, ServicePort{Name: p.Name, Protocol: protocolOrTCP(p.Protocol), Port: p.Port})
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("service %s: skipped invalid %s", key, strings.Join(bad, ", "))
	}
	return out, nil
}

// SliceFromAPI turns es, seen in TP tp, into a record. A slice without the
// kubernetes.io/service-name label, or of address type FQDN, belongs to no
// service a proxy serves: the result is nil with a nil error. Unparsable
// addresses are skipped and reported in the (informational) error.
func SliceFromAPI(tp string, es *discoveryv1.EndpointSlice) (*EndpointSlice, error) {
	if es == nil {
		return nil, fmt.Errorf("nil endpoint slice")
	}
	key := keyIn(tp, es)
	if err := key.Validate(); err != nil {
		return nil, fmt.Errorf("endpoint slice: %w", err)
	}
	svc := es.Labels[discoveryv1.LabelServiceName]
	if svc == "" || strings.Contains(svc, "/") {
		return nil, nil
	}
	if es.AddressType != discoveryv1.AddressTypeIPv4 && es.AddressType != discoveryv1.AddressTypeIPv6 {
		return nil, nil
	}
	out := &EndpointSlice{Key: key, Service: svc}
	var bad []string
	for _, p := range es.Ports {
		if p.Port == nil || *p.Port <= 0 || *p.Port > 65535 {
			continue // a port without a number selects nothing
		}
		ep := EndpointPort{Port: *p.Port, Protocol: corev1.ProtocolTCP}
		if p.Name != nil {
			ep.Name = *p.Name
		}
		if p.Protocol != nil {
			ep.Protocol = protocolOrTCP(*p.Protocol)
		}
		out.Ports = append(out.Ports, ep)
	}
	out.Endpoints = make([]Endpoint, 0, len(es.Endpoints))
	for _, e := range es.Endpoints {
		if len(e.Addresses) == 0 {
			continue
		}
		// Like upstream kube-proxy, the first address is the endpoint.
		a, err := netip.ParseAddr(e.Addresses[0])
		if err != nil || a.Zone() != "" {
			bad = append(bad, e.Addresses[0])
			continue
		}
		a = a.Unmap()
		if (es.AddressType == discoveryv1.AddressTypeIPv4) != a.Is4() {
			bad = append(bad, e.Addresses[0])
			continue
		}
		ep := Endpoint{IP: a, Ready: e.Conditions.Ready == nil || *e.Conditions.Ready}
		if e.NodeName != nil {
			ep.NodeName = *e.NodeName
		}
		out.Endpoints = append(out.Endpoints, ep)
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("endpoint slice %s: skipped invalid addresses %s", key, strings.Join(bad, ", "))
	}
	return out, nil
}

// EndpointsFromAPI turns ep, a core/v1 Endpoints seen in TP tp, into one
// record per subset: a subset is a set of addresses with one list of ports,
// as a slice is. Records are named "<endpoints name>.<subset index>" (an
// Endpoints is named after its service, a DNS label, so these never clash
// with it) and feed the service of the Endpoints' name. Addresses are ready,
// notReadyAddresses not. Unparsable addresses and ports are skipped and
// reported in the (informational) error.
func EndpointsFromAPI(tp string, ep *corev1.Endpoints) ([]*EndpointSlice, error) {
	if ep == nil {
		return nil, fmt.Errorf("nil endpoints")
	}
	key := keyIn(tp, ep)
	if err := key.Validate(); err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	out := make([]*EndpointSlice, 0, len(ep.Subsets))
	var bad []string
	for i, ss := range ep.Subsets {
		rec := &EndpointSlice{Key: key, Service: ep.Name}
		rec.Key.Name = subsetName(ep.Name, i)
		for _, p := range ss.Ports {
			if p.Port <= 0 || p.Port > 65535 {
				bad = append(bad, fmt.Sprintf("port %q=%d", p.Name, p.Port))
				continue
			}
			rec.Ports = append(rec.Ports, EndpointPort{Name: p.Name, Protocol: protocolOrTCP(p.Protocol), Port: p.Port})
		}
		rec.Endpoints = make([]Endpoint, 0, len(ss.Addresses)+len(ss.NotReadyAddresses))
		add := func(as []corev1.EndpointAddress, ready bool) {
			for _, a := range as {
				ip, err := netip.ParseAddr(a.IP)
				if err != nil || ip.Zone() != "" {
					bad = append(bad, a.IP)
					continue
				}
				e := Endpoint{IP: ip.Unmap(), Ready: ready}
				if a.NodeName != nil {
					e.NodeName = *a.NodeName
				}
				rec.Endpoints = append(rec.Endpoints, e)
			}
		}
		add(ss.Addresses, true)
		add(ss.NotReadyAddresses, false)
		out = append(out, rec)
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("endpoints %s: skipped invalid %s", key, strings.Join(bad, ", "))
	}
	return out, nil
}

func subsetName(endpoints string, i int) string { return endpoints + "." + strconv.Itoa(i) }

func protocolOrTCP(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// equalService reports whether two service records would serve the same.
func equalService(a, b *Service) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Key == b.Key && a.UID == b.UID && slices.Equal(a.ClusterIPs, b.ClusterIPs) && slices.Equal(a.Ports, b.Ports)
}

// equalSlice reports whether two slice records would serve the same.
func equalSlice(a, b *EndpointSlice) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Key == b.Key && a.Service == b.Service && slices.Equal(a.Ports, b.Ports) && slices.Equal(a.Endpoints, b.Endpoints)
}

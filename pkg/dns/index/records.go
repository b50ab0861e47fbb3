package index

import "net/netip"

// ServiceType is the DNS-relevant kind of a Service.
type ServiceType uint8

const (
	// ClusterIP services answer with their cluster IPs.
	ClusterIP ServiceType = iota
	// Headless services (clusterIP None) answer with their ready endpoints.
	Headless
	// ExternalName services answer with a CNAME.
	ExternalName
)

// NoPort marks a service or endpoint slice without ports. Such a service
// still has address records but no SRV records, as in CoreDNS.
const NoPort = -1

// Port is a named service or endpoint port.
type Port struct {
	Name     string
	Protocol string // "TCP", "UDP", "SCTP"
	Port     int32
}

// Service is what DNS needs of a v1.Service.
type Service struct {
	Tenant, Namespace, Name string
	Type                    ServiceType
	// ClusterIPs are the service's addresses, both families, primary first.
	ClusterIPs []netip.Addr
	// ExternalName is the CNAME target of an ExternalName service, as the
	// API has it; a trailing dot is optional (pkg/dns/source adds one).
	ExternalName string
	// Ports holds one Port{Port: NoPort} when the service has none.
	Ports []Port
}

// ServiceSpec is what answers need of a Service: its view keeps this much
// of it, without the tenant and namespace that its namespace already names.
// It takes 64 bytes: the first cluster IP is kept in place, not in a slice
// of its own, and what few services have (an ExternalName, a second cluster
// IP) is behind one pointer. At 600k objects that is 8 MB less for the
// collector to scan than a plain struct, and one less cache miss an answer.
type ServiceSpec struct {
	Name string
	Type ServiceType
	// shared is not the API's: it is a view's mark (ServiceView.Shared),
	// kept here because it fits in the padding after Type, where a field
	// of the view would take it from 96 bytes to the allocator's 112.
	// newServiceSpec leaves it false; Publish sets it (markShared).
	shared bool
	// clusterIP holds the only cluster IP, or none (the zero Addr).
	clusterIP [1]netip.Addr
	ports     *[]Port // interned: the services with equal ports share one list
	rare      *specRare
}

// specRare is the part of a ServiceSpec that few services have.
type specRare struct {
	externalName string
	clusterIPs   []netip.Addr // when there is more than one
}

// newServiceSpec returns s's spec with its ports as given (interned).
func newServiceSpec(s *Service, ports *[]Port) ServiceSpec {
	spec := ServiceSpec{Name: s.Name, Type: s.Type, ports: ports}
	switch {
	case len(s.ClusterIPs) > 1 || s.ExternalName != "":
		spec.rare = &specRare{externalName: s.ExternalName, clusterIPs: s.ClusterIPs}
	case len(s.ClusterIPs) == 1:
		spec.clusterIP[0] = s.ClusterIPs[0]
	}
	return spec
}

// ClusterIPs are the service's addresses, both families, primary first.
// The caller must not change them.
func (s *ServiceSpec) ClusterIPs() []netip.Addr {
	switch {
	case s.rare != nil:
		return s.rare.clusterIPs
	case s.clusterIP[0].IsValid():
		return s.clusterIP[:]
	}
	return nil
}

// ExternalName is the CNAME target of an ExternalName service.
func (s *ServiceSpec) ExternalName() string {
	if s.rare == nil {
		return ""
	}
	return s.rare.externalName
}

// Ports are the service's ports; one Port{Port: NoPort} when it has none.
// The caller must not change them.
func (s *ServiceSpec) Ports() []Port { return derefPorts(s.ports) }

// EndpointSlice is what DNS needs of a discovery/v1 EndpointSlice, or of a
// core/v1 Endpoints (named after its service): only the endpoints that are
// ready (a nil condition counts as ready).
type EndpointSlice struct {
	Tenant, Namespace, Name string
	// Service is the kubernetes.io/service-name label.
	Service string
	// Ports holds one Port{Port: NoPort} when the slice has none.
	Ports     []Port
	Endpoints []Endpoint
}

// Endpoint is one ready endpoint.
type Endpoint struct {
	Addrs    []netip.Addr
	Hostname string
	// Ports, when set, are this endpoint's ports instead of the slice's: a
	// core/v1 Endpoints has a port list per subset.
	Ports []Port
}

// Pod is what DNS needs of a v1.Pod.
type Pod struct {
	Tenant, Namespace, Name string
	IPs                     []netip.Addr
	HostNetwork             bool
}

// EndpointHostname is the DNS label of an endpoint: its hostname, else its
// address with dashes for dots or colons (CoreDNS's rule).
func EndpointHostname(hostname string, a netip.Addr) string {
	if hostname != "" {
		return hostname
	}
	var buf [maxAddrLabel]byte
	return string(appendAddrLabel(buf[:0], a))
}

// maxAddrLabel is the longest label appendAddrLabel writes (an IPv6
// address with an IPv4 tail), so that a buffer of it never grows.
const maxAddrLabel = 46

// appendAddrLabel appends a's label: its text with dashes for dots and
// colons. Distinct addresses get distinct labels (netip's text is
// canonical, and an IPv6 text never has three separators without two
// adjacent ones or seven).
func appendAddrLabel(b []byte, a netip.Addr) []byte {
	n := len(b)
	b = a.AppendTo(b)
	for i := n; i < len(b); i++ {
		if b[i] == '.' || b[i] == ':' {
			b[i] = '-'
		}
	}
	return b
}

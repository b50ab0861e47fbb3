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
type ServiceSpec struct {
	Name         string
	Type         ServiceType
	ClusterIPs   []netip.Addr
	ExternalName string
	Ports        []Port
}

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
	s := a.String()
	b := []byte(s)
	for i, c := range b {
		if c == '.' || c == ':' {
			b[i] = '-'
		}
	}
	return string(b)
}

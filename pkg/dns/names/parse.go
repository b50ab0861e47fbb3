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

package names

// Kind says what part of the zone a name falls in.
type Kind uint8

const (
	// Invalid names do not exist in the zone (NXDOMAIN).
	Invalid Kind = iota
	// Apex is the zone itself, "svc.<zone>" or "pod.<zone>": existing names
	// without records of their own (NODATA).
	Apex
	// DNSVersion is "dns-version.<zone>", which has the schema TXT record.
	DNSVersion
	// NameServer is "ns.dns.<zone>", the name of the server itself.
	NameServer
	// Service names fall under "svc.<zone>".
	Service
	// Pod names fall under "pod.<zone>".
	Pod
)

// Form says which objects a reading names.
type Form uint8

const (
	// TenantOnly names a tenant ("<tenant>.svc.<zone>"): NODATA when it exists.
	TenantOnly Form = iota + 1
	// NamespaceOnly names a namespace: NODATA when it exists.
	NamespaceOnly
	// ServiceName names a service, optionally with Port and Protocol (SRV form).
	ServiceName
	// EndpointName names one endpoint of a service by its hostname.
	EndpointName
	// PodName names a pod by its dashed IP ("a-b-c-d").
	PodName
)

// Reading is one interpretation of a name. Legacy readings use the upstream
// form and mean the system tenant; their answers keep the upstream form too.
type Reading struct {
	Form   Form
	Legacy bool
	// Tenant is empty for legacy readings.
	Tenant    []byte
	Namespace []byte
	Service   []byte // the service, or the pod's dashed IP for PodName
	Endpoint  []byte
	// Port and Protocol come from an SRV-form name with the leading '_'
	// removed. Empty means "any", as in the CoreDNS kubernetes plugin.
	Port     []byte
	Protocol []byte
}

// Request is the result of Parse: the kind of name and up to two readings,
// best first.
type Request struct {
	Kind     Kind
	N        int
	Readings [2]Reading
}

// MaxLabels is the most labels a name below the zone can have and still
// exist: _port._proto.svc.ns.tenant.svc.
const MaxLabels = 6

// Parse reads labels, the lowercase labels of a query name below a zone,
// leftmost first (for "a.b.svc.cluster.local" in zone "cluster.local":
// ["a" "b" "svc"]).
func Parse(labels [][]byte) Request {
	n := len(labels)
	var r Request
	switch {
	case n == 0:
		r.Kind = Apex
		return r
	case n > MaxLabels:
		return r
	}
	last := labels[n-1]
	switch {
	case n == 1 && string(last) == "dns-version":
		r.Kind = DNSVersion
		return r
	case n == 2 && string(labels[0]) == "ns" && string(last) == "dns":
		r.Kind = NameServer
		return r
	case string(last) == "svc":
		r.Kind = Service
	case string(last) == "pod":
		r.Kind = Pod
	default:
		return r
	}
	l := labels[:n-1]
	if len(l) == 0 {
		r.Kind = Apex
		return r
	}
	if r.Kind == Pod {
		return parsePod(l, r)
	}
	return parseService(l, r)
}

func parseService(l [][]byte, r Request) Request {
	switch len(l) {
	case 1:
		r.add(Reading{Form: NamespaceOnly, Legacy: true, Namespace: l[0]})
		r.add(Reading{Form: TenantOnly, Tenant: l[0]})
	case 2:
		r.add(Reading{Form: ServiceName, Legacy: true, Service: l[0], Namespace: l[1]})
		r.add(Reading{Form: NamespaceOnly, Namespace: l[0], Tenant: l[1]})
	case 3:
		r.add(Reading{Form: ServiceName, Service: l[0], Namespace: l[1], Tenant: l[2]})
		r.add(Reading{Form: EndpointName, Legacy: true, Endpoint: l[0], Service: l[1], Namespace: l[2]})
	case 4:
		srv := Reading{Form: ServiceName, Legacy: true, Port: stripUnderscore(l[0]), Protocol: stripUnderscore(l[1]), Service: l[2], Namespace: l[3]}
		if !underscored(l[0]) || !underscored(l[1]) {
			// A hostname never starts with '_', so only a name without
			// underscores can be a tenant-form endpoint.
			r.add(Reading{Form: EndpointName, Endpoint: l[0], Service: l[1], Namespace: l[2], Tenant: l[3]})
		}
		r.add(srv)
	case 5:
		r.add(Reading{Form: ServiceName, Port: stripUnderscore(l[0]), Protocol: stripUnderscore(l[1]), Service: l[2], Namespace: l[3], Tenant: l[4]})
	default:
		r.Kind = Invalid
	}
	return r
}

func parsePod(l [][]byte, r Request) Request {
	switch len(l) {
	case 1:
		r.add(Reading{Form: NamespaceOnly, Legacy: true, Namespace: l[0]})
		r.add(Reading{Form: TenantOnly, Tenant: l[0]})
	case 2:
		r.add(Reading{Form: PodName, Legacy: true, Service: l[0], Namespace: l[1]})
		r.add(Reading{Form: NamespaceOnly, Namespace: l[0], Tenant: l[1]})
	case 3:
		r.add(Reading{Form: PodName, Service: l[0], Namespace: l[1], Tenant: l[2]})
	default:
		r.Kind = Invalid
	}
	return r
}

func (r *Request) add(rd Reading) {
	if r.N < len(r.Readings) {
		r.Readings[r.N] = rd
		r.N++
	}
}

func underscored(b []byte) bool { return len(b) > 0 && b[0] == '_' }

func stripUnderscore(b []byte) []byte {
	if underscored(b) {
		return b[1:]
	}
	return b
}

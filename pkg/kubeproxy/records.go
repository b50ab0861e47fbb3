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
	"fmt"
	"strings"

	"github.com/tpkit-dev/tpkit/pkg/ipaddr"
)

// Service is what a node proxy reads of one service: a v1.Service reduced to
// plain values. The TP is not part of it: handlers receive it beside the
// record, as Arktos's do. Converting an API object is field copying
// (testbed/kubeproxyk8s does it for upstream types; an Arktos proxier does it
// in a few lines for its own); the view parses and validates.
type Service struct {
	// Tenant is the service's tenant; "" means the system tenant.
	Tenant    string
	Namespace string
	Name      string
	// ClusterIPs are the service's virtual IPs as the API has them:
	// spec.clusterIPs, or spec.clusterIP where the API has no list (Arktos).
	// "" and "None" (headless) are ignored; give none for an ExternalName
	// service. A proxy serves a service only when it has a cluster IP.
	ClusterIPs []string
	Ports      []ServicePort
}

// ServicePort is one port of a Service.
type ServicePort struct {
	// Name is the port's name; "" is allowed for a single-port service.
	Name string
	// Protocol is "TCP", "UDP" or "SCTP"; "" means TCP, the API's default.
	Protocol string
	Port     int32
}

// Endpoints are the backends one endpoints object of one TP gives a service:
// a core/v1 Endpoints (named after its service, all Arktos serves) or one
// discovery/v1 EndpointSlice (feeding the service its
// kubernetes.io/service-name label names). Like Service, the TP comes beside
// the record.
type Endpoints struct {
	// Tenant, Namespace and Name identify the object itself; the view keeps
	// one set of endpoints per object, replaced by each update.
	Tenant    string
	Namespace string
	Name      string
	// Service is the name of the service fed, in the object's TP, tenant
	// and namespace: an Endpoints' own name, a slice's service-name label.
	// "" feeds no service (a slice without the label, or of address type
	// FQDN): what the object fed before is forgotten.
	Service string
	// Endpoints are the object's backends, one per address and port.
	Endpoints []Endpoint
}

// Endpoint is one backend: an address on one port of the endpoints object.
type Endpoint struct {
	// Address is an IP address.
	Address string
	// PortName and Protocol select the service port served: the one with
	// the same name and protocol ("" means TCP).
	PortName string
	Protocol string
	Port     int32
	// Ready says whether the backend takes traffic: an Endpoints subset's
	// addresses are ready, its notReadyAddresses not; a slice endpoint is
	// ready unless its ready condition is false.
	Ready bool
	// NodeName is the node the backend runs on, "" when unknown.
	NodeName string
}

// service is a validated Service of one TP.
type service struct {
	name       ServiceName
	clusterIPs []ipaddr.Addr
	ports      []ServicePort // valid numbers, protocol set
}

// endpointSet is a validated Endpoints of one TP, as a proxier serves it:
// its ready endpoints (the only ones served), grouped by port name and
// protocol, each group sorted and without repeats. A service fed by one set
// serves a group's slice as it is (buildPorts shares it with the snapshot),
// so a set is never changed once parseEndpoints has made it.
type endpointSet struct {
	name    string // the object's name
	service string
	groups  []endpointGroup
}

// endpointGroup is the ready endpoints of one port name and protocol.
type endpointGroup struct {
	portName string
	protocol string
	ready    []EndpointAddr
}

// parseService validates rec as seen in TP tp. Unusable cluster IPs and
// ports are left out and reported in the error, which is informational:
// the result is still usable. The result is nil only when rec cannot be
// named at all.
func parseService(tp int, rec *Service) (*service, error) {
	if rec == nil {
		return nil, fmt.Errorf("nil service")
	}
	name := nameOf(tp, rec.Tenant, rec.Namespace, rec.Name)
	if err := name.validate(); err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	out := &service{name: name}
	var bad []string
	for _, s := range rec.ClusterIPs {
		if s == "" || s == "None" {
			continue
		}
		a, err := ipaddr.ParseAddr(s) // no zones
		if err != nil {
			bad = append(bad, s)
			continue
		}
		out.clusterIPs = append(out.clusterIPs, a.Unmap())
	}
	if len(rec.Ports) > 0 {
		out.ports = make([]ServicePort, 0, len(rec.Ports))
	}
	for _, p := range rec.Ports {
		if p.Port <= 0 || p.Port > 65535 {
			bad = append(bad, fmt.Sprintf("port %q=%d", p.Name, p.Port))
			continue
		}
		out.ports = append(out.ports, ServicePort{Name: p.Name, Protocol: protocolOrTCP(p.Protocol), Port: p.Port})
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("service %s: skipped invalid %s", name, strings.Join(bad, ", "))
	}
	return out, nil
}

// parseEndpoints validates rec as seen in TP tp: its key (the object's own
// name) and its set. Unusable addresses and ports are left out and reported
// in the (informational) error; set is nil only when rec cannot be named.
func parseEndpoints(tp int, rec *Endpoints) (key ServiceName, set *endpointSet, err error) {
	if rec == nil {
		return ServiceName{}, nil, fmt.Errorf("nil endpoints")
	}
	key = nameOf(tp, rec.Tenant, rec.Namespace, rec.Name)
	if err := key.validate(); err != nil {
		return key, nil, fmt.Errorf("endpoints: %w", err)
	}
	if strings.Contains(rec.Service, "/") {
		// No service can have that name: the object feeds none.
		return key, &endpointSet{}, fmt.Errorf("endpoints %s: service name %q holds '/'", key, rec.Service)
	}
	set = &endpointSet{name: rec.Name, service: rec.Service}
	if rec.Service == "" {
		return key, set, nil
	}
	// One slice for every ready endpoint; group is each one's group, kept
	// only once a second group appears (most objects have one port).
	ready := make([]EndpointAddr, 0, len(rec.Endpoints))
	var group []int
	var bad []string
	for _, e := range rec.Endpoints {
		if e.Port <= 0 || e.Port > 65535 {
			bad = append(bad, fmt.Sprintf("port %q=%d", e.PortName, e.Port))
			continue
		}
		ip, err := ipaddr.ParseAddr(e.Address) // no zones
		if err != nil {
			bad = append(bad, e.Address)
			continue
		}
		if !e.Ready {
			continue
		}
		proto := protocolOrTCP(e.Protocol)
		g := 0
		for g < len(set.groups) && (set.groups[g].portName != e.PortName || set.groups[g].protocol != proto) {
			g++
		}
		if g == len(set.groups) {
			set.groups = append(set.groups, endpointGroup{portName: e.PortName, protocol: proto})
			if g == 1 {
				group = make([]int, len(ready), cap(ready))
			}
		}
		ready = append(ready, EndpointAddr{IP: ip.Unmap(), Port: e.Port, NodeName: e.NodeName})
		if group != nil {
			group = append(group, g)
		}
	}
	switch {
	case len(set.groups) == 1:
		set.groups[0].ready = sortedEndpoints(ready)
	case len(set.groups) > 1:
		for g := range set.groups {
			n := 0
			for _, x := range group {
				if x == g {
					n++
				}
			}
			eps := make([]EndpointAddr, 0, n)
			for i, x := range group {
				if x == g {
					eps = append(eps, ready[i])
				}
			}
			set.groups[g].ready = sortedEndpoints(eps)
		}
	}
	if len(bad) > 0 {
		return key, set, fmt.Errorf("endpoints %s: skipped invalid %s", key, strings.Join(bad, ", "))
	}
	return key, set, nil
}

// sortedEndpoints sorts eps and drops repeats of an address and port.
func sortedEndpoints(eps []EndpointAddr) []EndpointAddr {
	if len(eps) > 1 {
		sortEndpoints(eps)
		eps = compactEndpoints(eps)
	}
	return eps
}

func protocolOrTCP(p string) string {
	if p == "" {
		return "TCP"
	}
	return p
}

// equalService reports whether two services would serve the same.
func equalService(a, b *service) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.name != b.name || len(a.clusterIPs) != len(b.clusterIPs) || len(a.ports) != len(b.ports) {
		return false
	}
	for i := range a.clusterIPs {
		if a.clusterIPs[i] != b.clusterIPs[i] {
			return false
		}
	}
	for i := range a.ports {
		if a.ports[i] != b.ports[i] {
			return false
		}
	}
	return true
}

// equalEndpoints reports whether two endpoint sets would serve the same.
func equalEndpoints(a, b *endpointSet) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.service != b.service || len(a.groups) != len(b.groups) {
		return false
	}
	for i := range a.groups {
		ga, gb := &a.groups[i], &b.groups[i]
		if ga.portName != gb.portName || ga.protocol != gb.protocol || len(ga.ready) != len(gb.ready) {
			return false
		}
		for j := range ga.ready {
			if ga.ready[j] != gb.ready[j] {
				return false
			}
		}
	}
	return true
}

package source

import (
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

func tenantOf(m metav1.Object) string {
	return tenancy.TenantOf(m) // "system" for an object without a tenant
}

func parseAddrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}

// Records copy the strings they keep (strings.Clone) rather than point into
// the decoded object: a decoded name sits among dozens of short-lived
// strings of its object, and one kept alive pins its whole span of memory
// long after the rest is collected.

// protocol returns the protocol's constant spelling, so records do not
// keep a decoded copy of it.
func protocol(p corev1.Protocol) string {
	switch p {
	case corev1.ProtocolTCP:
		return string(corev1.ProtocolTCP)
	case corev1.ProtocolUDP:
		return string(corev1.ProtocolUDP)
	case corev1.ProtocolSCTP:
		return string(corev1.ProtocolSCTP)
	}
	return strings.Clone(string(p))
}

// toService converts a v1.Service.
func toService(s *corev1.Service) *index.Service {
	out := &index.Service{Tenant: tenantOf(s), Namespace: s.Namespace, Name: strings.Clone(s.Name)}
	switch {
	case s.Spec.Type == corev1.ServiceTypeExternalName:
		out.Type = index.ExternalName
		out.ExternalName = strings.ToLower(strings.TrimSuffix(s.Spec.ExternalName, ".")) + "."
	case s.Spec.ClusterIP == corev1.ClusterIPNone:
		out.Type = index.Headless
	default:
		ips := s.Spec.ClusterIPs
		if len(ips) == 0 && s.Spec.ClusterIP != "" {
			ips = []string{s.Spec.ClusterIP}
		}
		out.ClusterIPs = parseAddrs(ips...)
	}
	for _, p := range s.Spec.Ports {
		out.Ports = append(out.Ports, index.Port{Name: p.Name, Protocol: protocol(p.Protocol), Port: p.Port})
	}
	if len(out.Ports) == 0 {
		out.Ports = []index.Port{{Port: index.NoPort}}
	}
	return out
}

// toSlice converts an EndpointSlice, keeping ready endpoints only;
// nil when the slice belongs to no service.
func toSlice(e *discoveryv1.EndpointSlice) *index.EndpointSlice {
	svc := e.Labels[discoveryv1.LabelServiceName]
	if svc == "" || e.AddressType == discoveryv1.AddressTypeFQDN {
		return nil
	}
	out := &index.EndpointSlice{Tenant: tenantOf(e), Namespace: e.Namespace, Name: strings.Clone(e.Name), Service: strings.Clone(svc)}
	for _, p := range e.Ports {
		ip := index.Port{Port: index.NoPort}
		if p.Port != nil {
			ip.Port = *p.Port
		}
		if p.Name != nil {
			ip.Name = *p.Name
		}
		if p.Protocol != nil {
			ip.Protocol = protocol(*p.Protocol)
		}
		out.Ports = append(out.Ports, ip)
	}
	if len(out.Ports) == 0 {
		out.Ports = []index.Port{{Port: index.NoPort}}
	}
	for _, ep := range e.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		x := index.Endpoint{Addrs: parseAddrs(ep.Addresses...)}
		if ep.Hostname != nil {
			x.Hostname = strings.Clone(*ep.Hostname)
		}
		if len(x.Addrs) > 0 {
			out.Endpoints = append(out.Endpoints, x)
		}
	}
	return out
}

// toEndpoints converts a core/v1 Endpoints, named after its service, into
// the same record as a slice: ready addresses only, each with its subset's
// ports.
func toEndpoints(e *corev1.Endpoints) *index.EndpointSlice {
	name := strings.Clone(e.Name) // one copy: the record's name is its service's
	out := &index.EndpointSlice{Tenant: tenantOf(e), Namespace: e.Namespace, Name: name, Service: name,
		Ports: []index.Port{{Port: index.NoPort}}}
	for _, ss := range e.Subsets {
		ports := make([]index.Port, 0, len(ss.Ports))
		for _, p := range ss.Ports {
			ports = append(ports, index.Port{Name: p.Name, Protocol: protocol(p.Protocol), Port: p.Port})
		}
		if len(ports) == 0 {
			ports = append(ports, index.Port{Port: index.NoPort})
		}
		for _, a := range ss.Addresses {
			x := index.Endpoint{Addrs: parseAddrs(a.IP), Hostname: strings.Clone(a.Hostname), Ports: ports}
			if len(x.Addrs) > 0 {
				out.Endpoints = append(out.Endpoints, x)
			}
		}
	}
	return out
}

// endpointsRecord converts what an endpoints feed delivers, an Endpoints or
// an EndpointSlice; nil when it feeds no service.
func endpointsRecord(obj any) (*index.EndpointSlice, bool) {
	switch o := obj.(type) {
	case *corev1.Endpoints:
		return toEndpoints(o), true
	case *discoveryv1.EndpointSlice:
		return toSlice(o), true
	}
	return nil, false
}

// toPod converts a pod; nil when it has no address or has ended.
func toPod(p *slimPod) *index.Pod {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil
	}
	var ss []string
	for _, x := range p.Status.PodIPs {
		ss = append(ss, x.IP)
	}
	if len(ss) == 0 && p.Status.PodIP != "" {
		ss = []string{p.Status.PodIP}
	}
	out := &index.Pod{Tenant: p.Metadata.tenant(), Namespace: p.Metadata.Namespace, Name: p.Metadata.Name, IPs: parseAddrs(ss...), HostNetwork: p.Spec.HostNetwork}
	if len(out.IPs) == 0 {
		return nil
	}
	return out
}

// kind is what a feed lists and watches.
type kind uint8

const (
	namespaces kind = iota
	services
	endpoints // core/v1 Endpoints or EndpointSlices, as the TP serves
	pods
)

func (k kind) String() string {
	return [...]string{"namespaces", "services", "endpoints", "pods"}[k]
}

// index names the kind as the index does.
func (k kind) index() index.Kind {
	return [...]index.Kind{index.Namespaces, index.Services, index.EndpointSlices, index.Pods}[k]
}

// store is a feed's sink that keeps nothing of its own: it turns each
// object into its small index record at once and hands it to the Builder,
// which holds what later updates and deletes need. No informer cache, queue
// or key strings stay alive beside the index, and a list's pages go into
// the index as they come (Builder.BeginList), so no list waits in memory.
type store struct {
	s      *Source
	tp     int
	kind   kind
	synced atomic.Bool // the first list has been delivered
	// listing is set between StartList and the Replace that ends a paged
	// list.
	listing bool
	bad     any // an object of the wrong type in the list, reported by Replace
}

func (st *store) Add(obj any) error    { return st.apply(obj, false) }
func (st *store) Update(obj any) error { return st.apply(obj, false) }
func (st *store) Delete(obj any) error { return st.apply(obj, true) }
func (st *store) Resync() error        { return nil }

// apply hands one object to the index. Objects come with their tenant in
// metadata.tenant (pkg/tenancy/k8s's Transport); no store here keys by
// namespace/name.
func (st *store) apply(obj any, deleted bool) error {
	b, tp := st.s.b, st.tp
	switch o := obj.(type) {
	case *corev1.Namespace:
		if t := tenantOf(o); st.s.exposed(t, o.Name, "") {
			b.SetNamespace(tp, t, o.Name, !deleted)
		}
	case *corev1.Service:
		t, ns := tenantOf(o), o.Namespace
		switch {
		case !st.s.exposed(t, ns, o.Name):
		case deleted:
			b.DeleteService(tp, t, ns, o.Name)
		default:
			b.SetService(tp, toService(o))
		}
	case *corev1.Endpoints, *discoveryv1.EndpointSlice:
		m := o.(metav1.Object)
		t, ns := tenantOf(m), m.GetNamespace()
		if !st.s.exposed(t, ns, serviceOf(m)) {
			return nil
		}
		var rec *index.EndpointSlice
		if !deleted {
			rec, _ = endpointsRecord(o)
		}
		if rec == nil {
			b.DeleteEndpointSlice(tp, t, ns, m.GetName())
			return nil
		}
		b.SetEndpointSlice(tp, rec)
	case *corev1.Pod:
		return st.apply(slimOfPod(o), deleted)
	case *slimPod:
		// Pods of every tenant are kept, scope or not: they say which TP
		// and tenant a querier belongs to.
		var rec *index.Pod
		if !deleted {
			rec = toPod(o)
		}
		if rec == nil {
			b.DeletePod(tp, o.Metadata.tenant(), o.Metadata.Namespace, o.Metadata.Name)
			return nil
		}
		b.SetPod(tp, rec)
	default:
		return fmt.Errorf("partition-dns: %s feed delivered a %T", st.kind, obj)
	}
	return nil
}

// StartList begins a paged list (informer.PagedSink).
func (st *store) StartList() {
	st.s.b.BeginList(st.tp, st.kind.index())
	st.listing, st.bad = true, nil
}

// ListPage hands one page of a list to the index.
func (st *store) ListPage(items []any) error {
	st.listItems(items)
	return nil
}

// Replace ends a (re)list: what it lacked is deleted from the index. With
// paged lists, list is empty and the pages came through ListPage.
func (st *store) Replace(list []any, _ string) error {
	if !st.listing {
		st.StartList()
	}
	st.listItems(list)
	st.s.b.EndList(st.tp, st.kind.index())
	st.listing = false
	st.synced.Store(true)
	if st.bad != nil {
		return fmt.Errorf("partition-dns: %s feed listed a %T", st.kind, st.bad)
	}
	return nil
}

// listItems applies listed objects; one of another kind is left out and
// noted in st.bad.
func (st *store) listItems(items []any) {
	for _, obj := range items {
		if !st.kind.holds(obj) {
			st.bad = obj
			continue
		}
		_ = st.apply(obj, false) // errors only for the kinds holds refuses
	}
}

// holds reports whether obj is of the kind.
func (k kind) holds(obj any) bool {
	switch obj.(type) {
	case *corev1.Namespace:
		return k == namespaces
	case *corev1.Service:
		return k == services
	case *corev1.Endpoints, *discoveryv1.EndpointSlice:
		return k == endpoints
	case *corev1.Pod, *slimPod:
		return k == pods
	}
	return false
}

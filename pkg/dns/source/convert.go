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
	out := &index.EndpointSlice{Tenant: tenantOf(e), Namespace: e.Namespace, Name: strings.Clone(e.Name), Service: strings.Clone(e.Name),
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
func toPod(p *corev1.Pod) *index.Pod {
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
	out := &index.Pod{Tenant: tenantOf(p), Namespace: p.Namespace, Name: strings.Clone(p.Name), IPs: parseAddrs(ss...), HostNetwork: p.Spec.HostNetwork}
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

// store is a feed's sink that keeps nothing of its own: it turns each
// object into its small index record at once and hands it to the Builder,
// which holds what later updates and deletes need. No informer cache, queue
// or key strings stay alive beside the index.
type store struct {
	s      *Source
	tp     int
	kind   kind
	synced atomic.Bool // the first list has been delivered
	staged staging     // the pages of the list being received
}

func (st *store) Add(obj any) error    { return st.apply(obj, false) }
func (st *store) Update(obj any) error { return st.apply(obj, false) }
func (st *store) Delete(obj any) error { return st.apply(obj, true) }
func (st *store) Resync() error        { return nil }

// apply hands one watched object to the index. Objects come with their
// tenant in the annotation (pkg/tenancy/k8s's Transport); no store here keys by
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
		// Pods of every tenant are kept, scope or not: they say which TP
		// and tenant a querier belongs to.
		var rec *index.Pod
		if !deleted {
			rec = toPod(o)
		}
		if rec == nil {
			b.DeletePod(tp, tenantOf(o), o.Namespace, o.Name)
			return nil
		}
		b.SetPod(tp, rec)
	default:
		return fmt.Errorf("partition-dns: %s feed delivered a %T", st.kind, obj)
	}
	return nil
}

// staging is a list being received page by page (informer.PagedSink): the
// index records of the pages so far, applied together by Replace.
type staging struct {
	namespaces []index.NamespaceKey
	services   []*index.Service
	endpoints  []*index.EndpointSlice
	pods       []*index.Pod
	bad        any // an object of the wrong type, reported by Replace
}

// StartList begins a paged list: what an earlier, failed one staged goes.
func (st *store) StartList() { st.staged = staging{} }

// ListPage converts one page of a list to index records and stages them,
// so that only the records, not the API objects, wait for the rest.
func (st *store) ListPage(items []any) error {
	st.stage(items)
	return nil
}

// Replace hands a whole (re)list to the index: what the list lacks is
// deleted. With paged lists, list is empty and the pages were staged.
func (st *store) Replace(list []any, _ string) error {
	st.stage(list)
	b, tp, staged := st.s.b, st.tp, st.staged
	st.staged = staging{}
	switch st.kind {
	case namespaces:
		b.ReplaceNamespaces(tp, staged.namespaces)
	case services:
		b.ReplaceServices(tp, staged.services)
	case endpoints:
		b.ReplaceEndpointSlices(tp, staged.endpoints)
	case pods:
		b.ReplacePods(tp, staged.pods)
	}
	st.synced.Store(true)
	if staged.bad != nil {
		return fmt.Errorf("partition-dns: %s feed listed a %T", st.kind, staged.bad)
	}
	return nil
}

// stage converts listed objects to the kind's index records and adds them
// to st.staged.
func (st *store) stage(list []any) {
	s, g := st.s, &st.staged
	switch st.kind {
	case namespaces:
		g.namespaces = records(g.namespaces, list, &g.bad, func(o *corev1.Namespace) (index.NamespaceKey, bool) {
			t := tenantOf(o)
			return index.NamespaceKey{Tenant: t, Name: o.Name}, s.exposed(t, o.Name, "")
		})
	case services:
		g.services = records(g.services, list, &g.bad, func(o *corev1.Service) (*index.Service, bool) {
			if !s.exposed(tenantOf(o), o.Namespace, o.Name) {
				return nil, false
			}
			return toService(o), true
		})
	case endpoints:
		g.endpoints = records(g.endpoints, list, &g.bad, func(o metav1.Object) (*index.EndpointSlice, bool) {
			if !s.exposed(tenantOf(o), o.GetNamespace(), serviceOf(o)) {
				return nil, false
			}
			rec, ok := endpointsRecord(o)
			if !ok {
				g.bad = o
			}
			return rec, rec != nil
		})
	case pods:
		g.pods = records(g.pods, list, &g.bad, func(o *corev1.Pod) (*index.Pod, bool) {
			rec := toPod(o)
			return rec, rec != nil
		})
	}
}

// records appends to out the listed objects of type O that conv keeps; an
// object of another type is left out and put in *bad.
func records[O, R any](out []R, list []any, bad *any, conv func(O) (R, bool)) []R {
	for _, obj := range list {
		o, ok := obj.(O)
		if !ok {
			*bad = obj
			continue
		}
		if r, ok := conv(o); ok {
			out = append(out, r)
		}
	}
	return out
}

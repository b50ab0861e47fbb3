package source

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// realNamespace undoes the re-keying: "<tenant>/<ns>" → ns.
func realNamespace(ns string) string {
	if i := strings.IndexByte(ns, '/'); i >= 0 {
		return ns[i+1:]
	}
	return ns
}

func tenantOf(m metav1.Object) string {
	t := tenancy.TenantOf(m)
	if tenancy.IsSystem(t) {
		return tenancy.SystemTenant
	}
	return t
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

// toService converts a (trimmed) v1.Service.
func toService(s *corev1.Service) *index.Service {
	out := &index.Service{Tenant: tenantOf(s), Namespace: realNamespace(s.Namespace), Name: s.Name}
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
		out.Ports = append(out.Ports, index.Port{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port})
	}
	if len(out.Ports) == 0 {
		out.Ports = []index.Port{{Port: index.NoPort}}
	}
	return out
}

// toSlice converts a (trimmed) EndpointSlice, keeping ready endpoints only;
// nil when the slice belongs to no service.
func toSlice(e *discoveryv1.EndpointSlice) *index.EndpointSlice {
	svc := e.Labels[discoveryv1.LabelServiceName]
	if svc == "" || e.AddressType == discoveryv1.AddressTypeFQDN {
		return nil
	}
	out := &index.EndpointSlice{Tenant: tenantOf(e), Namespace: realNamespace(e.Namespace), Name: e.Name, Service: svc}
	for _, p := range e.Ports {
		ip := index.Port{Port: index.NoPort}
		if p.Port != nil {
			ip.Port = *p.Port
		}
		if p.Name != nil {
			ip.Name = *p.Name
		}
		if p.Protocol != nil {
			ip.Protocol = string(*p.Protocol)
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
			x.Hostname = *ep.Hostname
		}
		if len(x.Addrs) > 0 {
			out.Endpoints = append(out.Endpoints, x)
		}
	}
	return out
}

// toPod converts a (trimmed) pod; nil when it has no address or has ended.
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
	out := &index.Pod{Tenant: tenantOf(p), Namespace: realNamespace(p.Namespace), Name: p.Name, IPs: parseAddrs(ss...), HostNetwork: p.Spec.HostNetwork}
	if len(out.IPs) == 0 {
		return nil
	}
	return out
}

// object is what the informer caches instead of an API object: the key
// fields, and the small index record. The embedded metav1.Object is a shared
// empty ObjectMeta, so the informer's key functions work (they read only the
// name and the namespace) while the cache holds a few dozen bytes per object
// instead of a decoded API struct.
type object struct {
	metav1.Object
	name, ns string
}

var emptyMeta = &metav1.ObjectMeta{}

func newObject(m metav1.Object) object {
	return object{Object: emptyMeta, name: m.GetName(), ns: m.GetNamespace()}
}

func (o *object) GetName() string      { return o.name }
func (o *object) GetNamespace() string { return o.ns }

type serviceObj struct {
	object
	rec *index.Service
}

type sliceObj struct {
	object
	tenant, namespace string
	rec               *index.EndpointSlice // nil: not a service's slice
}

type podObj struct {
	object
	tenant, namespace string
	rec               *index.Pod // nil: no address, or ended
}

type namespaceObj struct {
	object
	tenant string
}

// transform is the informer transform: it turns each API object into its
// small record once, at the informer boundary.
func transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		return &serviceObj{object: newObject(o), rec: toService(o)}, nil
	case *discoveryv1.EndpointSlice:
		return &sliceObj{object: newObject(o), tenant: tenantOf(o), namespace: realNamespace(o.Namespace), rec: toSlice(o)}, nil
	case *corev1.Pod:
		return &podObj{object: newObject(o), tenant: tenantOf(o), namespace: realNamespace(o.Namespace), rec: toPod(o)}, nil
	case *corev1.Namespace:
		return &namespaceObj{object: newObject(o), tenant: tenantOf(o)}, nil
	}
	return obj, nil
}

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

// trimMeta keeps the fields the index and the informer need.
func trimMeta(m *metav1.ObjectMeta) {
	t := tenancy.TenantOf(m)
	*m = metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion, Labels: m.Labels, DeletionTimestamp: m.DeletionTimestamp}
	if !tenancy.IsSystem(t) {
		m.Annotations = map[string]string{tenancy.TenantAnnotation: t}
	}
}

// trim is the informer transform: it drops everything DNS does not read, so
// the informer caches stay small.
func trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		trimMeta(&o.ObjectMeta)
		o.Labels = nil
		o.Spec = corev1.ServiceSpec{Type: o.Spec.Type, ClusterIP: o.Spec.ClusterIP, ClusterIPs: o.Spec.ClusterIPs, ExternalName: o.Spec.ExternalName, Ports: trimPorts(o.Spec.Ports)}
		o.Status = corev1.ServiceStatus{}
	case *discoveryv1.EndpointSlice:
		trimMeta(&o.ObjectMeta)
		if svc := o.Labels[discoveryv1.LabelServiceName]; svc != "" {
			o.Labels = map[string]string{discoveryv1.LabelServiceName: svc}
		} else {
			o.Labels = nil
		}
		for i := range o.Endpoints {
			ep := &o.Endpoints[i]
			*ep = discoveryv1.Endpoint{Addresses: ep.Addresses, Conditions: discoveryv1.EndpointConditions{Ready: ep.Conditions.Ready}, Hostname: ep.Hostname}
		}
	case *corev1.Pod:
		trimMeta(&o.ObjectMeta)
		o.Labels = nil
		o.Spec = corev1.PodSpec{HostNetwork: o.Spec.HostNetwork}
		o.Status = corev1.PodStatus{Phase: o.Status.Phase, PodIP: o.Status.PodIP, PodIPs: o.Status.PodIPs}
	case *corev1.Namespace:
		trimMeta(&o.ObjectMeta)
		o.Labels = nil
		o.Spec = corev1.NamespaceSpec{}
		o.Status = corev1.NamespaceStatus{}
	}
	return obj, nil
}

func trimPorts(ps []corev1.ServicePort) []corev1.ServicePort {
	if len(ps) == 0 {
		return nil
	}
	out := make([]corev1.ServicePort, len(ps))
	for i, p := range ps {
		out[i] = corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port}
	}
	return out
}

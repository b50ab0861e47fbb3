package kubeproxyk8s

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// ServiceFromAPI turns svc into the core's record, nil for nil. The tenant
// is tenancy.TenantOf(svc); the cluster IPs are spec.clusterIPs, or
// spec.clusterIP when the list is empty (an Arktos TP), and none for an
// ExternalName service. Nothing is validated here: the view does that.
func ServiceFromAPI(svc *corev1.Service) *kubeproxy.Service {
	if svc == nil {
		return nil
	}
	rec := &kubeproxy.Service{Tenant: tenancy.TenantOf(svc), Namespace: svc.Namespace, Name: svc.Name}
	if svc.Spec.Type != corev1.ServiceTypeExternalName {
		rec.ClusterIPs = svc.Spec.ClusterIPs
		if len(rec.ClusterIPs) == 0 && svc.Spec.ClusterIP != "" {
			rec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
	}
	if len(svc.Spec.Ports) > 0 {
		rec.Ports = make([]kubeproxy.ServicePort, len(svc.Spec.Ports))
		for i, p := range svc.Spec.Ports {
			rec.Ports[i] = kubeproxy.ServicePort{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port}
		}
	}
	return rec
}

// EndpointsFromAPI turns a core/v1 Endpoints into the core's record, nil
// for nil: it feeds the service of its own name, with one entry per subset
// address and port; addresses are ready, notReadyAddresses not.
func EndpointsFromAPI(ep *corev1.Endpoints) *kubeproxy.Endpoints {
	if ep == nil {
		return nil
	}
	rec := &kubeproxy.Endpoints{Tenant: tenancy.TenantOf(ep), Namespace: ep.Namespace, Name: ep.Name, Service: ep.Name}
	n := 0
	for _, ss := range ep.Subsets {
		n += len(ss.Ports) * (len(ss.Addresses) + len(ss.NotReadyAddresses))
	}
	rec.Endpoints = make([]kubeproxy.Endpoint, 0, n)
	for _, ss := range ep.Subsets {
		for _, p := range ss.Ports {
			add := func(as []corev1.EndpointAddress, ready bool) {
				for _, a := range as {
					e := kubeproxy.Endpoint{Address: a.IP, PortName: p.Name, Protocol: string(p.Protocol), Port: p.Port, Ready: ready}
					if a.NodeName != nil {
						e.NodeName = *a.NodeName
					}
					rec.Endpoints = append(rec.Endpoints, e)
				}
			}
			add(ss.Addresses, true)
			add(ss.NotReadyAddresses, false)
		}
	}
	return rec
}

// SliceFromAPI turns a discovery/v1 EndpointSlice into the core's record,
// nil for nil: it feeds the service its kubernetes.io/service-name label
// names, with one entry per endpoint and port. A slice without the label,
// or of address type FQDN, feeds no service (Service ""). As in upstream
// kube-proxy, an endpoint's first address is the one used, and an unset
// ready condition means ready. Ports without a number select nothing and
// are left out; addresses of the other family than the slice's address type
// are left out and named in the error, which is informational.
func SliceFromAPI(es *discoveryv1.EndpointSlice) (*kubeproxy.Endpoints, error) {
	if es == nil {
		return nil, nil
	}
	rec := &kubeproxy.Endpoints{Tenant: tenancy.TenantOf(es), Namespace: es.Namespace, Name: es.Name}
	if es.AddressType != discoveryv1.AddressTypeIPv4 && es.AddressType != discoveryv1.AddressTypeIPv6 {
		return rec, nil
	}
	rec.Service = es.Labels[discoveryv1.LabelServiceName]
	if rec.Service == "" {
		return rec, nil
	}
	rec.Endpoints = make([]kubeproxy.Endpoint, 0, len(es.Endpoints)*len(es.Ports))
	var bad []string
	for _, e := range es.Endpoints {
		if len(e.Addresses) == 0 {
			continue
		}
		addr := e.Addresses[0]
		if a, err := netip.ParseAddr(addr); err == nil && a.Unmap().Is4() != (es.AddressType == discoveryv1.AddressTypeIPv4) {
			bad = append(bad, addr)
			continue
		}
		ready := e.Conditions.Ready == nil || *e.Conditions.Ready
		var node string
		if e.NodeName != nil {
			node = *e.NodeName
		}
		for _, p := range es.Ports {
			if p.Port == nil {
				continue
			}
			ep := kubeproxy.Endpoint{Address: addr, Port: *p.Port, Ready: ready, NodeName: node}
			if p.Name != nil {
				ep.PortName = *p.Name
			}
			if p.Protocol != nil {
				ep.Protocol = string(*p.Protocol)
			}
			rec.Endpoints = append(rec.Endpoints, ep)
		}
	}
	if len(bad) > 0 {
		return rec, fmt.Errorf("endpoint slice %s/%s/%s (%s): skipped addresses of the other family: %s",
			rec.Tenant, rec.Namespace, rec.Name, es.AddressType, strings.Join(bad, ", "))
	}
	return rec, nil
}

// The informers keep records, not API objects: at 600k objects over 10 TPs
// the decoded Services and Endpoints took 430 MB of a 650 MB heap, and the
// records all a proxy reads of them take a fraction of that.

// serviceEntry is what a services informer keeps of a Service.
type serviceEntry struct{ *kubeproxy.Service }

// InformerKey is the Service's key (keyedRecord).
func (e serviceEntry) InformerKey() (tenant, namespace, name string) {
	return e.Tenant, e.Namespace, e.Name
}

// endpointsEntry is what an endpoints informer keeps of an Endpoints or an
// EndpointSlice.
type endpointsEntry struct{ *kubeproxy.Endpoints }

// InformerKey is the object's key (keyedRecord).
func (e endpointsEntry) InformerKey() (tenant, namespace, name string) {
	return e.Tenant, e.Namespace, e.Name
}

// keepService is the services informer's transform: the Service's record
// in place of the Service. Other objects pass unchanged.
func keepService(obj any) (any, error) {
	if o, ok := obj.(*corev1.Service); ok {
		return serviceEntry{ServiceFromAPI(o)}, nil
	}
	return obj, nil
}

// keepEndpoints returns partition tp's endpoints informer's transform: an
// Endpoints' or EndpointSlice's record in place of the object, the slice's
// skipped addresses logged once here. Other objects pass unchanged.
func keepEndpoints(tp string) func(obj any) (any, error) {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *corev1.Endpoints:
			return endpointsEntry{EndpointsFromAPI(o)}, nil
		case *discoveryv1.EndpointSlice:
			rec, err := SliceFromAPI(o)
			if err != nil {
				klog.V(2).InfoS("Skipping part of an endpoint slice", "partition", tp, "err", err)
			}
			return endpointsEntry{rec}, nil
		}
		return obj, nil
	}
}

package proxy

import (
	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/proxy/config"
)

// TPFilter feeds tpkit's view from Arktos's per-TP ServiceConfig/EndpointsConfig.
type TPFilter struct{ View *kubeproxy.View }

var _ config.ServiceHandler = (*TPFilter)(nil)
var _ config.EndpointsHandler = (*TPFilter)(nil)

// NewTPFilter serves TPs 0..n-1 (the --tenant-server-kubeconfig files).
func NewTPFilter(n int, tenants kubeproxy.TenantPartitions) *TPFilter {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return &TPFilter{View: kubeproxy.NewView(ids, kubeproxy.Options{Tenants: tenants})}
}

func serviceRecord(s *v1.Service) *kubeproxy.Service {
	if s == nil {
		return nil
	}
	r := &kubeproxy.Service{Tenant: s.Tenant, Namespace: s.Namespace, Name: s.Name}
	if s.Spec.Type != v1.ServiceTypeExternalName {
		r.ClusterIPs = []string{s.Spec.ClusterIP}
	}
	for _, p := range s.Spec.Ports {
		r.Ports = append(r.Ports, kubeproxy.ServicePort{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port})
	}
	return r
}

func endpointsRecord(e *v1.Endpoints) *kubeproxy.Endpoints {
	if e == nil {
		return nil
	}
	r := &kubeproxy.Endpoints{Tenant: e.Tenant, Namespace: e.Namespace, Name: e.Name, Service: e.Name}
	for _, ss := range e.Subsets {
		for _, p := range ss.Ports {
			for i, addrs := range [][]v1.EndpointAddress{ss.Addresses, ss.NotReadyAddresses} {
				for _, a := range addrs {
					ep := kubeproxy.Endpoint{Address: a.IP, PortName: p.Name, Protocol: string(p.Protocol), Port: p.Port, Ready: i == 0}
					if a.NodeName != nil {
						ep.NodeName = *a.NodeName
					}
					r.Endpoints = append(r.Endpoints, ep)
				}
			}
		}
	}
	return r
}

func (f *TPFilter) OnServiceAdd(s *v1.Service, tp int) { f.View.OnServiceAdd(serviceRecord(s), tp) }
func (f *TPFilter) OnServiceUpdate(o, s *v1.Service, tp int) {
	f.View.OnServiceUpdate(serviceRecord(o), serviceRecord(s), tp)
}
func (f *TPFilter) OnServiceDelete(s *v1.Service, tp int) {
	f.View.OnServiceDelete(serviceRecord(s), tp)
}
func (f *TPFilter) OnServiceSynced(tp int) { f.View.OnServiceSynced(tp) }
func (f *TPFilter) OnEndpointsAdd(e *v1.Endpoints, tp int) {
	f.View.OnEndpointsAdd(endpointsRecord(e), tp)
}
func (f *TPFilter) OnEndpointsUpdate(o, e *v1.Endpoints, tp int) {
	f.View.OnEndpointsUpdate(endpointsRecord(o), endpointsRecord(e), tp)
}
func (f *TPFilter) OnEndpointsDelete(e *v1.Endpoints, tp int) {
	f.View.OnEndpointsDelete(endpointsRecord(e), tp)
}
func (f *TPFilter) OnEndpointsSynced(tp int) { f.View.OnEndpointsSynced(tp) }

// CoreName is Arktos's ServicePortName as the core's; String() is equal.
func CoreName(spn ServicePortName) kubeproxy.ServicePortName {
	return kubeproxy.ServicePortName{ServiceName: kubeproxy.ServiceName{
		TenantPartitionID: spn.TenantPartitionId, Tenant: spn.Tenant, Namespace: spn.Namespace, Name: spn.Name}, Port: spn.Port}
}

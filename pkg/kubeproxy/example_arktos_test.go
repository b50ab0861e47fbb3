package kubeproxy_test

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
)

// The types below are hand-written stand-ins for what an Arktos 6685f14
// tree has, reduced to the fields a proxier reads: v1.Service and
// v1.Endpoints (staging/src/k8s.io/api/core/v1, with ObjectMeta.Tenant), and
// proxy.ServicePortName (pkg/proxy/types.go), which embeds
// types.NamespacednameWithTenantSource.

type arktosObjectMeta struct{ Tenant, Namespace, Name string }

type arktosServicePort struct {
	Name     string
	Protocol string
	Port     int32
}

type arktosService struct {
	arktosObjectMeta
	Spec struct {
		Type      string
		ClusterIP string // Arktos's v1.ServiceSpec has no ClusterIPs list
		Ports     []arktosServicePort
	}
}

type arktosEndpointAddress struct {
	IP       string
	NodeName *string
}

type arktosEndpointPort struct {
	Name     string
	Port     int32
	Protocol string
}

type arktosEndpointSubset struct {
	Addresses         []arktosEndpointAddress
	NotReadyAddresses []arktosEndpointAddress
	Ports             []arktosEndpointPort
}

type arktosEndpoints struct {
	arktosObjectMeta
	Subsets []arktosEndpointSubset
}

type arktosNamespacednameWithTenantSource struct {
	TenantPartitionId int
	Tenant, Namespace string
	Name              string
}

type arktosServicePortName struct {
	arktosNamespacednameWithTenantSource
	Port string
}

// String is Arktos's format for a ServicePortName.
func (spn arktosServicePortName) String() string {
	return fmt.Sprintf("%s_%d/%s/%s:%s", spn.Tenant, spn.TenantPartitionId, spn.Namespace, spn.Name, spn.Port)
}

// arktosServiceHandler and arktosEndpointsHandler are the shapes of
// Arktos's config.ServiceHandler and config.EndpointsHandler
// (pkg/proxy/config/config.go), which its proxiers implement.
type arktosServiceHandler interface {
	OnServiceAdd(service *arktosService, tenantParitionId int)
	OnServiceUpdate(oldService, service *arktosService, tenantParitionId int)
	OnServiceDelete(service *arktosService, tenantParitionId int)
	OnServiceSynced(tenantParitionId int)
}

type arktosEndpointsHandler interface {
	OnEndpointsAdd(endpoints *arktosEndpoints, tenantPartitionId int)
	OnEndpointsUpdate(oldEndpoints, endpoints *arktosEndpoints, tenantPartitionId int)
	OnEndpointsDelete(endpoints *arktosEndpoints, tenantPartitionId int)
	OnEndpointsSynced(tenantPartitionId int)
}

// arktosProxier is an Arktos proxier whose handlers feed the core's view
// instead of its own change trackers: each method converts the v1 object
// and passes the tenantPartitionId through.
type arktosProxier struct {
	view *kubeproxy.View
	snap *kubeproxy.Snapshot
}

var (
	_ arktosServiceHandler   = (*arktosProxier)(nil)
	_ arktosEndpointsHandler = (*arktosProxier)(nil)
)

func (p *arktosProxier) OnServiceAdd(svc *arktosService, tp int) {
	p.view.OnServiceAdd(serviceRecord(svc), tp)
}
func (p *arktosProxier) OnServiceUpdate(old, svc *arktosService, tp int) {
	p.view.OnServiceUpdate(serviceRecord(old), serviceRecord(svc), tp)
}
func (p *arktosProxier) OnServiceDelete(svc *arktosService, tp int) {
	p.view.OnServiceDelete(serviceRecord(svc), tp)
}
func (p *arktosProxier) OnServiceSynced(tp int) { p.view.OnServiceSynced(tp) }
func (p *arktosProxier) OnEndpointsAdd(ep *arktosEndpoints, tp int) {
	p.view.OnEndpointsAdd(endpointsRecord(ep), tp)
}
func (p *arktosProxier) OnEndpointsUpdate(old, ep *arktosEndpoints, tp int) {
	p.view.OnEndpointsUpdate(endpointsRecord(old), endpointsRecord(ep), tp)
}
func (p *arktosProxier) OnEndpointsDelete(ep *arktosEndpoints, tp int) {
	p.view.OnEndpointsDelete(endpointsRecord(ep), tp)
}
func (p *arktosProxier) OnEndpointsSynced(tp int) { p.view.OnEndpointsSynced(tp) }

// serviceRecord is the whole conversion of a service.
func serviceRecord(s *arktosService) *kubeproxy.Service {
	if s == nil {
		return nil
	}
	rec := &kubeproxy.Service{Tenant: s.Tenant, Namespace: s.Namespace, Name: s.Name}
	if s.Spec.Type != "ExternalName" {
		rec.ClusterIPs = []string{s.Spec.ClusterIP}
	}
	for _, p := range s.Spec.Ports {
		rec.Ports = append(rec.Ports, kubeproxy.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port})
	}
	return rec
}

// endpointsRecord is the whole conversion of an Endpoints: one entry per
// subset address and port.
func endpointsRecord(e *arktosEndpoints) *kubeproxy.Endpoints {
	if e == nil {
		return nil
	}
	rec := &kubeproxy.Endpoints{Tenant: e.Tenant, Namespace: e.Namespace, Name: e.Name, Service: e.Name}
	for _, ss := range e.Subsets {
		for _, p := range ss.Ports {
			for i, addrs := range [][]arktosEndpointAddress{ss.Addresses, ss.NotReadyAddresses} {
				for _, a := range addrs {
					ep := kubeproxy.Endpoint{Address: a.IP, PortName: p.Name, Protocol: p.Protocol, Port: p.Port, Ready: i == 0}
					if a.NodeName != nil {
						ep.NodeName = *a.NodeName
					}
					rec.Endpoints = append(rec.Endpoints, ep)
				}
			}
		}
	}
	return rec
}

// syncProxyRules is where Arktos's proxier reads its service and endpoints
// maps: here it applies the view's changes and looks every port up by its
// own ServicePortName, whose string the core's matches.
func (p *arktosProxier) syncProxyRules() []string {
	if !p.view.Synced() {
		return nil // not initialised until every TP has synced
	}
	p.view.Apply(p.snap)
	var rules []string
	for port := range p.snap.All() {
		n := port.Name
		spn := arktosServicePortName{arktosNamespacednameWithTenantSource{n.TenantPartitionID, n.Tenant, n.Namespace, n.Name}, n.Port}
		var eps []string
		for _, e := range p.snap.Endpoints(n) {
			eps = append(eps, e.AddrPort().String())
		}
		if spn.String() != n.String() {
			panic("key strings differ: " + spn.String() + " " + n.String())
		}
		rules = append(rules, fmt.Sprintf("%s %s:%d -> %s", spn, port.ClusterIPs[0], port.Port, strings.Join(eps, " ")))
	}
	sort.Strings(rules)
	return rules
}

func arktosDNS(tenant, clusterIP string) *arktosService {
	s := &arktosService{arktosObjectMeta: arktosObjectMeta{Tenant: tenant, Namespace: "kube-system", Name: "kube-dns"}}
	s.Spec.ClusterIP = clusterIP
	s.Spec.Ports = []arktosServicePort{{Name: "dns", Protocol: "UDP", Port: 53}}
	return s
}

func arktosDNSEndpoints(ready []string, notReady ...string) *arktosEndpoints {
	ss := arktosEndpointSubset{Ports: []arktosEndpointPort{{Name: "dns", Port: 53, Protocol: "UDP"}}}
	for _, ip := range ready {
		ss.Addresses = append(ss.Addresses, arktosEndpointAddress{IP: ip})
	}
	for _, ip := range notReady {
		ss.NotReadyAddresses = append(ss.NotReadyAddresses, arktosEndpointAddress{IP: ip})
	}
	return &arktosEndpoints{arktosObjectMeta: arktosObjectMeta{Tenant: "system", Namespace: "kube-system", Name: "kube-dns"}, Subsets: []arktosEndpointSubset{ss}}
}

// Example_arktosProxier plugs the core into an Arktos proxier: two TPs (the
// two files of --tenant-server-kubeconfig, tenantPartitionIds 0 and 1) have
// the same system service kube-system/kube-dns, and each service port gets
// only its own TP's ready endpoints. The proxier is initialised only once
// both TPs have synced.
func Example_arktosProxier() {
	p := &arktosProxier{view: kubeproxy.NewView([]int{0, 1}, kubeproxy.Options{}), snap: kubeproxy.NewSnapshot()}

	// What Arktos's per-TP ServiceConfig and EndpointsConfig
	// (cmd/kube-proxy/app/server.go, one pair per client i) deliver.
	p.OnServiceAdd(arktosDNS("system", "10.0.0.10"), 0)
	p.OnEndpointsAdd(arktosDNSEndpoints([]string{"10.244.0.2"}), 0)
	p.OnServiceSynced(0)
	p.OnEndpointsSynced(0)
	fmt.Println("after TP 0 synced:", p.syncProxyRules())

	p.OnServiceAdd(arktosDNS("system", "10.1.0.10"), 1)
	p.OnEndpointsAdd(arktosDNSEndpoints([]string{"10.244.1.3", "10.244.1.2"}, "10.244.1.9"), 1)
	p.OnServiceSynced(1)
	p.OnEndpointsSynced(1)
	for _, r := range p.syncProxyRules() {
		fmt.Println(r)
	}
	// Output:
	// after TP 0 synced: []
	// system_0/kube-system/kube-dns:dns 10.0.0.10:53 -> 10.244.0.2:53
	// system_1/kube-system/kube-dns:dns 10.1.0.10:53 -> 10.244.1.2:53 10.244.1.3:53
}

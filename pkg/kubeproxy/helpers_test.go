package kubeproxy

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

func svcObj(tenant, ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(tenant + "-" + ns + "-" + name)},
		Spec:       corev1.ServiceSpec{ClusterIP: ip, Ports: ports},
	}
	if ip != "" && ip != corev1.ClusterIPNone {
		s.Spec.ClusterIPs = []string{ip}
	}
	if tenant != "" {
		tenancy.SetTenant(s, tenant)
	}
	return s
}

func port(name string, p int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: p, Protocol: corev1.ProtocolTCP}
}

func udpPort(name string, p int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: p, Protocol: corev1.ProtocolUDP}
}

func ptr[T any](v T) *T { return &v }

type epSpec struct {
	ip    string
	ready *bool
}

func sliceObj(tenant, ns, name, service string, portName string, portNum int32, eps ...epSpec) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr(portName), Port: ptr(portNum), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, e := range eps {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.ip}, Conditions: discoveryv1.EndpointConditions{Ready: e.ready}})
	}
	if tenant != "" {
		tenancy.SetTenant(es, tenant)
	}
	return es
}

func ready(ips ...string) []epSpec {
	out := make([]epSpec, len(ips))
	for i, ip := range ips {
		out[i] = epSpec{ip: ip}
	}
	return out
}

func spn(tp, tenant, ns, name, portName string) ServicePortName {
	return ServicePortName{Service: tenancy.Key{Partition: tp, Tenant: tenant, Namespace: ns, Name: name}, Port: portName, Protocol: corev1.ProtocolTCP}
}

func endpointIPs(t *testing.T, s *Snapshot, n ServicePortName) []string {
	t.Helper()
	var out []string
	for _, e := range s.Endpoints(n) {
		out = append(out, netip.AddrPortFrom(e.IP, uint16(e.Port)).String())
	}
	return out
}

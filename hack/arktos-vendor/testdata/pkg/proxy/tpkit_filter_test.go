package proxy

import (
	"testing"

	"k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestTPFilterWithArktosTypes(t *testing.T) {
	f := NewTPFilter(2, nil)
	for tp, ip := range []string{"10.0.0.10", "10.1.0.10"} {
		f.OnServiceAdd(&v1.Service{ObjectMeta: metav1.ObjectMeta{Tenant: "system", Namespace: "kube-system", Name: "kube-dns"},
			Spec: v1.ServiceSpec{ClusterIP: ip, Ports: []v1.ServicePort{{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP}}}}, tp)
		f.OnEndpointsAdd(&v1.Endpoints{ObjectMeta: metav1.ObjectMeta{Tenant: "system", Namespace: "kube-system", Name: "kube-dns"},
			Subsets: []v1.EndpointSubset{{Addresses: []v1.EndpointAddress{{IP: "10.244." + string(rune('0'+tp)) + ".2"}},
				Ports: []v1.EndpointPort{{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP}}}}}, tp)
		f.OnServiceSynced(tp)
		if tp == 0 && f.View.Synced() {
			t.Fatal("synced after the first TP")
		}
		f.OnEndpointsSynced(tp)
	}
	if !f.View.Synced() {
		t.Fatal("not synced")
	}
	s := f.View.Snapshot()
	for tp, want := range []string{"10.244.0.2:53", "10.244.1.2:53"} {
		spn := ServicePortName{NamespacednameWithTenantSource: types.NamespacednameWithTenantSource{TenantPartitionId: tp, Tenant: "system", Namespace: "kube-system", Name: "kube-dns"}, Port: "dns"}
		n := CoreName(spn)
		if n.String() != spn.String() {
			t.Fatalf("core %q, Arktos %q", n, spn)
		}
		eps := s.Endpoints(n)
		if len(eps) != 1 || eps[0].AddrPort().String() != want {
			t.Fatalf("%s: %v, want %s", spn, eps, want)
		}
		t.Logf("%s -> %s", spn, eps[0].AddrPort())
	}
}

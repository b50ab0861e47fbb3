package kubeproxyk8s

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

func ptr[T any](v T) *T { return &v }

func TestServiceFromAPI(t *testing.T) {
	base := func() *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", ClusterIPs: []string{"10.0.0.1", "fd00::1"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}
		tenancy.SetTenant(s, "acme")
		return s
	}
	rec := ServiceFromAPI(base())
	want := &kubeproxy.Service{Tenant: "acme", Namespace: "ns", Name: "web", ClusterIPs: []string{"10.0.0.1", "fd00::1"},
		Ports: []kubeproxy.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}, {Name: "dns", Protocol: "UDP", Port: 53}}}
	if fmt.Sprint(rec) != fmt.Sprint(want) {
		t.Errorf("service %+v, want %+v", rec, want)
	}

	// An Arktos TP has no clusterIPs list: the single clusterIP is used.
	s := base()
	s.Spec.ClusterIPs = nil
	if got := ServiceFromAPI(s).ClusterIPs; !slices.Equal(got, []string{"10.0.0.1"}) {
		t.Errorf("clusterIP only: %v", got)
	}
	// ExternalName: no cluster IP, so nothing to proxy.
	s = base()
	s.Spec.Type = corev1.ServiceTypeExternalName
	if got := ServiceFromAPI(s).ClusterIPs; got != nil {
		t.Errorf("ExternalName: %v", got)
	}
	// No tenant: the system tenant.
	s = base()
	s.Annotations = nil
	if got := ServiceFromAPI(s).Tenant; got != "system" {
		t.Errorf("tenant %q", got)
	}
	if ServiceFromAPI(nil) != nil {
		t.Error("nil service converted")
	}
}

func endpointsObj(tenant, ns, name string, subsets ...corev1.EndpointSubset) *corev1.Endpoints {
	e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Subsets: subsets}
	if tenant != "" {
		tenancy.SetTenant(e, tenant)
	}
	return e
}

func subset(ports []corev1.EndpointPort, ready []string, notReady ...string) corev1.EndpointSubset {
	ss := corev1.EndpointSubset{Ports: ports}
	for _, ip := range ready {
		ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: ip, NodeName: ptr("node-" + ip)})
	}
	for _, ip := range notReady {
		ss.NotReadyAddresses = append(ss.NotReadyAddresses, corev1.EndpointAddress{IP: ip})
	}
	return ss
}

// entries renders a record's endpoints as "addr port-name/proto:port ready node".
func entries(rec *kubeproxy.Endpoints) []string {
	var out []string
	for _, e := range rec.Endpoints {
		out = append(out, fmt.Sprintf("%s %s/%s:%d %v %s", e.Address, e.PortName, e.Protocol, e.Port, e.Ready, e.NodeName))
	}
	slices.Sort(out)
	return out
}

// TestEndpointsFromAPI: every subset's addresses on every port of the same
// subset; the record feeds the service of the object's name.
func TestEndpointsFromAPI(t *testing.T) {
	ep := endpointsObj("acme", "web", "api",
		subset([]corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}, []string{"192.168.1.1"}, "192.168.1.9"),
		subset([]corev1.EndpointPort{{Name: "http", Port: 8080}, {Name: "admin", Port: 9090}}, []string{"192.168.1.2"}))
	rec := EndpointsFromAPI(ep)
	if rec.Tenant != "acme" || rec.Namespace != "web" || rec.Name != "api" || rec.Service != "api" {
		t.Fatalf("record %+v", rec)
	}
	want := []string{
		"192.168.1.1 http/TCP:8080 true node-192.168.1.1",
		"192.168.1.2 admin/:9090 true node-192.168.1.2",
		"192.168.1.2 http/:8080 true node-192.168.1.2",
		"192.168.1.9 http/TCP:8080 false ",
	}
	if got := entries(rec); !slices.Equal(got, want) {
		t.Errorf("entries\n got %q\nwant %q", got, want)
	}
	if rec := EndpointsFromAPI(endpointsObj("", "ns", "svc")); rec.Tenant != "system" || len(rec.Endpoints) != 0 || rec.Service != "svc" {
		t.Errorf("empty endpoints %+v", rec)
	}
	if EndpointsFromAPI(nil) != nil {
		t.Error("nil endpoints converted")
	}
}

func sliceObj(tenant, ns, name, service string, at discoveryv1.AddressType, ips ...string) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: at,
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)},
			{Name: ptr("nonum")},
		},
	}
	for _, ip := range ips {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip, "10.9.9.9"}})
	}
	tenancy.SetTenant(es, tenant)
	return es
}

func TestSliceFromAPI(t *testing.T) {
	es := sliceObj("acme", "web", "api-x1", "api", discoveryv1.AddressTypeIPv4, "192.168.1.1", "192.168.1.2")
	es.Endpoints[1].Conditions.Ready = ptr(false)
	es.Endpoints[0].NodeName = ptr("node-1")
	es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{}) // no address: nothing
	rec, err := SliceFromAPI(es)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Service != "api" || rec.Name != "api-x1" || rec.Tenant != "acme" {
		t.Fatalf("record %+v", rec)
	}
	// The first address only, an unset condition is ready, the port without
	// a number is left out.
	want := []string{"192.168.1.1 http/TCP:8080 true node-1", "192.168.1.2 http/TCP:8080 false "}
	if got := entries(rec); !slices.Equal(got, want) {
		t.Errorf("entries\n got %q\nwant %q", got, want)
	}

	// No label, or FQDN: feeds no service.
	bare := sliceObj("acme", "web", "x", "api", discoveryv1.AddressTypeIPv4, "192.168.1.1")
	delete(bare.Labels, discoveryv1.LabelServiceName)
	fqdn := sliceObj("acme", "web", "y", "api", discoveryv1.AddressTypeFQDN, "db.example.com")
	for _, es := range []*discoveryv1.EndpointSlice{bare, fqdn} {
		if rec, err := SliceFromAPI(es); err != nil || rec.Service != "" || len(rec.Endpoints) != 0 || rec.Name != es.Name {
			t.Errorf("%s: %+v, %v; want a record feeding nothing", es.Name, rec, err)
		}
	}

	// Addresses of the other family are left out and named.
	mixed := sliceObj("acme", "web", "z", "api", discoveryv1.AddressTypeIPv6, "fd00::1", "192.168.1.5", "::ffff:192.168.1.6")
	rec, err = SliceFromAPI(mixed)
	if err == nil || !strings.Contains(err.Error(), "192.168.1.5") || !strings.Contains(err.Error(), "::ffff:192.168.1.6") {
		t.Errorf("err %v, want the IPv4 addresses named", err)
	}
	if got := entries(rec); !slices.Equal(got, []string{"fd00::1 http/TCP:8080 true "}) {
		t.Errorf("mixed entries %q", got)
	}
	if rec, err := SliceFromAPI(nil); rec != nil || err != nil {
		t.Error("nil slice converted")
	}
}

// TestConvertedRecordsInTheView: both endpoint forms feed the same view
// alike: an Endpoints and an equivalent EndpointSlice give the same
// snapshot.
func TestConvertedRecordsInTheView(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "api"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	fromEndpoints := kubeproxy.NewView([]int{0}, kubeproxy.Options{})
	fromEndpoints.OnServiceAdd(ServiceFromAPI(svc), 0)
	fromEndpoints.OnEndpointsAdd(EndpointsFromAPI(endpointsObj("", "web", "api",
		subset([]corev1.EndpointPort{{Name: "http", Port: 8080}}, []string{"192.168.1.1", "192.168.1.2"}))), 0)
	fromSlices := kubeproxy.NewView([]int{0}, kubeproxy.Options{})
	fromSlices.OnServiceAdd(ServiceFromAPI(svc), 0)
	rec, err := SliceFromAPI(sliceObj("", "web", "api-1", "api", discoveryv1.AddressTypeIPv4, "192.168.1.2", "192.168.1.1"))
	if err != nil {
		t.Fatal(err)
	}
	fromSlices.OnEndpointsAdd(rec, 0)
	n := kubeproxy.ServicePortName{ServiceName: kubeproxy.ServiceName{Tenant: "system", Namespace: "web", Name: "api"}, Port: "http"}
	addrs := func(v *kubeproxy.View) (out []string) {
		for _, e := range v.Snapshot().Endpoints(n) {
			out = append(out, e.AddrPort().String())
		}
		return out
	}
	a, b := addrs(fromEndpoints), addrs(fromSlices)
	if !slices.Equal(a, []string{"192.168.1.1:8080", "192.168.1.2:8080"}) || !slices.Equal(a, b) {
		t.Fatalf("Endpoints gave %v, the slice %v", a, b)
	}
}

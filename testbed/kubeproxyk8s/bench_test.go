package kubeproxyk8s

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// BenchmarkInitialEventsFromAPI is pkg/kubeproxy's BenchmarkInitialEvents
// with the adapter's part: 3 TPs × 10k Services and EndpointSlices (3
// endpoints each) as an informer delivers them, converted to records and fed
// to a view.
func BenchmarkInitialEventsFromAPI(b *testing.B) {
	const perTP = 10000
	tps := []int{0, 1, 2}
	services := map[int][]*corev1.Service{}
	slices := map[int][]*discoveryv1.EndpointSlice{}
	for _, tp := range tps {
		for i := 0; i < perTP; i++ {
			tenant := "system"
			if i%2 == 1 {
				tenant = fmt.Sprintf("t%d", i%50)
			}
			ns, name := fmt.Sprintf("ns%d", i%100), fmt.Sprintf("svc%d", i)
			ip := fmt.Sprintf("10.%d.%d.%d", 96+tp, (i>>8)&255, i&255)
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
			tenancy.SetTenant(svc, tenant)
			services[tp] = append(services[tp], svc)
			es := &discoveryv1.EndpointSlice{
				ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}},
			}
			for j := 0; j < 3; j++ {
				es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("172.%d.%d.%d", 16+tp, (i*3+j)>>8&255, (i*3+j)&255)}})
			}
			tenancy.SetTenant(es, tenant)
			slices[tp] = append(slices[tp], es)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := kubeproxy.NewView(tps, kubeproxy.Options{})
		for _, tp := range tps {
			for _, s := range services[tp] {
				v.OnServiceAdd(ServiceFromAPI(s), tp)
			}
			for _, es := range slices[tp] {
				rec, _ := SliceFromAPI(es)
				v.OnEndpointsAdd(rec, tp)
			}
		}
	}
}

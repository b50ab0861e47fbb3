package kubeproxyk8s

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

func benchServices(n int) []any {
	out := make([]any, n)
	for i := range out {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("svc-%d", i), ResourceVersion: "1"}}
		tenancy.SetTenant(s, fmt.Sprintf("tenant-%d", i%10))
		out[i] = s
	}
	return out
}

// BenchmarkReplace10k is a relist of 10,000 services that are all known: the
// store swaps its map and pairs every object with its previous version.
func BenchmarkReplace10k(b *testing.B) {
	objs := benchServices(10000)
	i := newInformer(&cache.ListWatch{}, &corev1.Service{}, cache.ResourceEventHandlerFuncs{}, informerOptions{})
	s := (*store)(i)
	if err := s.Replace(objs, "1"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Replace(objs, "1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdate is one watch event for a known object.
func BenchmarkUpdate(b *testing.B) {
	objs := benchServices(10000)
	i := newInformer(&cache.ListWatch{}, &corev1.Service{}, cache.ResourceEventHandlerFuncs{}, informerOptions{})
	s := (*store)(i)
	if err := s.Replace(objs, "1"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if err := s.Update(objs[n%len(objs)]); err != nil {
			b.Fatal(err)
		}
		n++
	}
}

package kubeclientmanager

import (
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"

	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

func TestTPClientManager(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tporigin.db")
	tr, err := tporigin.Open(tporigin.Options{Path: path, Partitions: []string{"tp0", "tp1"}})
	if err != nil {
		t.Fatal(err)
	}
	m := NewTPClientManager(tr)
	clients := []clientset.Interface{fake.NewSimpleClientset(), fake.NewSimpleClientset()}
	pod := func(uid, src string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID("11111111-2222-3333-4444-55555555555" + uid), Tenant: "system", Namespace: "kube-system", Name: "ds-x",
			Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: src}}}
	}
	a, b, s := pod("a", "api0"), pod("b", "api1"), pod("c", "file")
	for _, p := range []*v1.Pod{a, b, s} {
		if err := m.RegisterPodSourceServer(p.Annotations[kubetypes.ConfigSourceAnnotationKey], p); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	if c, err := m.GetTPClient(clients, b.UID); err != nil || c != clients[1] {
		t.Fatalf("pod b: %v %v", c == clients[1], err)
	}
	if c, err := m.GetTPClient(clients, a.UID); err != nil || c != clients[0] {
		t.Fatalf("pod a: %v %v", c == clients[0], err)
	}
	if _, err := m.GetTPClient(clients, s.UID); !IsNoTP(err) {
		t.Fatalf("static pod: want no TP, got %v", err)
	}
	if i, err := m.ConfigMapClient("system", "kube-system", "cfg", b.UID); err != nil || i != 1 {
		t.Fatalf("configmap of b: %d %v", i, err)
	}
	tr.Close()
	tr2, err := tporigin.Open(tporigin.Options{Path: path, Partitions: []string{"tp0", "tp1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	if i, err := NewTPClientManager(tr2).PickClient(b.UID); err != nil || i != 1 {
		t.Fatalf("after restart: %d %v", i, err)
	}
}

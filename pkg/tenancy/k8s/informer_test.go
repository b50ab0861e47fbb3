package k8s_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/arktoshttp"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
)

// TestInformersKeepTenant runs a real client-go informer over HTTP against
// Arktos-shaped JSON and checks the typed objects carry their tenant.
func TestInformersKeepTenant(t *testing.T) {
	h := arktoshttp.NewHandler("pods", "PodList",
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"default","tenant":"t1","uid":"u1","resourceVersion":"1"}}`,
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"default","tenant":"t2","uid":"u2","resourceVersion":"1"}}`,
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"coredns","namespace":"kube-system","uid":"u3","resourceVersion":"1"}}`,
	)
	srv := httptest.NewServer(h)
	defer srv.Close()

	client, err := partitiontest.NewClients(tenancyk8s.WrapConfig(&rest.Config{Host: srv.URL}), nil)
	if err != nil {
		t.Fatal(err)
	}
	// What informers.NewSharedInformerFactory(...).Core().V1().Pods()
	// builds underneath: a ListWatch over the typed client's List and
	// Watch, and a shared index informer of *corev1.Pod. The typed client
	// decodes through tenancy's transport either way.
	pods := client.CoreV1().Pods(metav1.NamespaceAll)
	inf := cache.NewSharedIndexInformer(partitiontest.ListWatch(pods.List, pods.Watch), &corev1.Pod{}, 0, cache.Indexers{})
	var mu sync.Mutex
	seen := map[string]string{} // uid -> tenant
	added := make(chan struct{}, 10)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		p := obj.(*corev1.Pod)
		mu.Lock()
		seen[string(p.UID)] = tenancy.TenantOf(p)
		mu.Unlock()
		added <- struct{}{}
	}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	// A watch event from the server carries a tenant too.
	for h.Watchers() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	h.Send(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"db","namespace":"default","tenant":"t3","uid":"u4","resourceVersion":"2"}}}`)
	for i := 0; i < 4; i++ {
		<-added
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]string{"u1": "t1", "u2": "t2", "u3": tenancy.SystemTenant, "u4": "t3"}
	for uid, tenant := range want {
		if seen[uid] != tenant {
			t.Errorf("pod %s: tenant %q, want %q (all: %v)", uid, seen[uid], tenant, seen)
		}
	}
}

// TestWithTenantRoutesToTenantPath checks a typed GET for a regular tenant
// reaches the Arktos tenant path and a request body carries metadata.tenant.
func TestWithTenantRoutesToTenantPath(t *testing.T) {
	var mu sync.Mutex
	var paths, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 4096)
		n, _ := r.Body.Read(buf)
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		bodies = append(bodies, string(buf[:n]))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm","namespace":"ns","tenant":"t1"},"data":{"k":"v"}}`))
	}))
	defer srv.Close()
	client, err := partitiontest.NewClients(tenancyk8s.WrapConfig(&rest.Config{Host: srv.URL}), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := tenancyk8s.WithTenant(context.Background(), "t1")
	cm, err := client.CoreV1().ConfigMaps("ns").Get(ctx, "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tenancy.TenantOf(cm) != "t1" || cm.Data["k"] != "v" {
		t.Fatalf("got %+v", cm)
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Get(context.Background(), "cm", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"GET /api/v1/tenants/t1/namespaces/ns/configmaps/cm", "PUT /api/v1/tenants/t1/namespaces/ns/configmaps/cm", "GET /api/v1/namespaces/ns/configmaps/cm"}
	for i := range want {
		if i >= len(paths) || paths[i] != want[i] {
			t.Fatalf("requests = %v, want %v", paths, want)
		}
	}
	if !strings.Contains(bodies[1], `"tenant":"t1"`) || strings.Contains(bodies[1], tenancy.TenantAnnotation) {
		t.Fatalf("PUT body should carry metadata.tenant and not the annotation: %s", bodies[1])
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Get(tenancyk8s.WithTenant(context.Background(), "Bad_Tenant"), "cm", metav1.GetOptions{}); err == nil {
		t.Fatal("an invalid tenant in the context must fail before reaching the server")
	}
}

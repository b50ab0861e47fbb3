package kubeproxyk8s

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
)

// recorder writes each event as "<op> <tenant>/<ns>/<name> <label v>", with
// the old object's identity for updates.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func desc(obj any) string {
	tomb := ""
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, tomb = d.Obj, " (inferred)"
	}
	if k, ok := obj.(keyed); ok {
		return fmt.Sprintf("%s/%s/%s %s%s", k.tenant, k.namespace, k.name, k.v, tomb)
	}
	s := obj.(*corev1.Service)
	return fmt.Sprintf("%s/%s/%s %s%s", tenancy.TenantOf(s), s.Namespace, s.Name, s.Labels["v"], tomb)
}

// keyed is a record a Transform keeps in place of a Service
// (keyedRecord).
type keyed struct{ tenant, namespace, name, v string }

func (k keyed) InformerKey() (string, string, string) { return k.tenant, k.namespace, k.name }

// keep is a Transform that keeps a keyed record of each Service.
func keep(obj any) (any, error) {
	s := obj.(*corev1.Service)
	return keyed{tenancy.TenantOf(s), s.Namespace, s.Name, s.Labels["v"]}, nil
}

func (r *recorder) log(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	slices.Sort(out)
	return out
}

func (r *recorder) OnAdd(obj any, initial bool) {
	r.log(fmt.Sprintf("add %s initial=%v", desc(obj), initial))
}
func (r *recorder) OnUpdate(old, cur any) { r.log("update " + desc(old) + " -> " + desc(cur)) }
func (r *recorder) OnDelete(obj any)      { r.log("delete " + desc(obj)) }

func svc(tenant, v string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "api", Labels: map[string]string{"v": v}}}
	tenancy.SetTenant(s, tenant)
	return s
}

func waitEvents(t *testing.T, r *recorder, want ...string) {
	t.Helper()
	slices.Sort(want)
	var got []string
	deadline := time.Now().Add(30 * time.Second) // hang guard only
	for time.Now().Before(deadline) {
		got = append(got, r.take()...)
		slices.Sort(got)
		if len(got) >= len(want) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events\n  %q\nwant\n  %q", got, want)
	}
}

// TestTenantsWithEqualNamesStayApart: services of equal names in two
// tenants are two objects through adds, updates, watched deletes and a
// relist, whether the informer keeps the objects or records a Transform
// made of them (keyedRecord), which the deletes' objects must find, and
// whether it lists whole or in pages of one object.
func TestTenantsWithEqualNamesStayApart(t *testing.T) {
	t.Run("objects", func(t *testing.T) { testTenantsApart(t, nil, 0) })
	t.Run("keyed records", func(t *testing.T) { testTenantsApart(t, keep, 0) })
	t.Run("keyed records, pages of one", func(t *testing.T) { testTenantsApart(t, keep, 1) })
}

func testTenantsApart(t *testing.T, transform cache.TransformFunc, pageSize int64) {
	tp := faketp.StartT(t, faketp.Options{Partitions: 1}).TPs()[0]
	if err := tp.Seed(svc("acme", "1"), svc("zeta", "1")); err != nil {
		t.Fatal(err)
	}
	c, err := partitiontest.NewClients(tenancyk8s.WrapConfig(tp.RESTConfig()), nil)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := informer.NewClients(tenancyk8s.WrapConfig(tp.RESTConfig()), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every tenant's namespace web: not the TP's master service
	// system/default/kubernetes.
	lw, err := informer.NewListWatch(lc, informer.Services, informer.Scope{FieldSelector: "metadata.namespace=web"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	inf := newInformer(lw, &corev1.Service{}, rec, informerOptions{Name: "services", Transform: transform, PageSize: pageSize})
	run := func() (stop func()) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); inf.Run(ctx) }()
		return func() { cancel(); <-done }
	}
	stop := run()
	waitEvents(t, rec, "add acme/web/api 1 initial=true", "add zeta/web/api 1 initial=true")
	if !inf.HasSynced() || inf.Len() != 2 {
		t.Fatalf("synced %v, %d objects; want 2", inf.HasSynced(), inf.Len())
	}

	ctx := t.Context()
	acme, zeta := tenancyk8s.WithTenant(ctx, "acme"), tenancyk8s.WithTenant(ctx, "zeta")
	cur, err := c.CoreV1().Services("web").Get(acme, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Labels["v"] = "2"
	if _, err := c.CoreV1().Services("web").Update(acme, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, rec, "update acme/web/api 1 -> acme/web/api 2")
	if err := c.CoreV1().Services("web").Delete(zeta, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, rec, "delete zeta/web/api 1")

	// While nobody watches, zeta's service comes back and acme's goes: the
	// next list must add the one and delete the other, not pair them.
	stop()
	if _, err := c.CoreV1().Services("web").Create(zeta, svc("zeta", "3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Services("web").Delete(acme, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stop = run()
	defer stop()
	waitEvents(t, rec, "add zeta/web/api 3 initial=false", "delete acme/web/api 2 (inferred)")
	if objs := inf.List(); len(objs) != 1 || desc(objs[0]) != "zeta/web/api 3" {
		t.Fatalf("List after relist: %v", objs)
	}
}

// TestKeyOf: objects key by tenant (system when they have none),
// namespace and name, through tombstones too, and keyed records by the key
// they name.
func TestKeyOf(t *testing.T) {
	cases := []struct {
		obj  any
		want string
	}{
		{svc("acme", ""), "acme/web/api"},
		{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"}}, "system/kube-system/kube-dns"},
		{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, "system//web"},
		{cache.DeletedFinalStateUnknown{Key: "x", Obj: svc("zeta", "")}, "zeta/web/api"},
		{keyed{"acme", "web", "api", ""}, "acme/web/api"},
		{cache.DeletedFinalStateUnknown{Key: "x", Obj: keyed{"zeta", "web", "api", ""}}, "zeta/web/api"},
	}
	for _, tc := range cases {
		if got, err := keyOf(tc.obj); err != nil || got.String() != tc.want {
			t.Errorf("keyOf(%T) = %q, %v; want %q", tc.obj, got, err, tc.want)
		}
	}
	if _, err := keyOf("not an object"); err == nil {
		t.Error("keyOf(string) gave no error")
	}
}

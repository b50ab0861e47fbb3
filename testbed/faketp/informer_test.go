package faketp_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// waitTimeout only keeps a broken test from hanging; nothing is asserted
// about how long things take.
const waitTimeout = 60 * time.Second

// recorder keeps what an informer's handler saw, by kind and key.
type recorder struct {
	mu     sync.Mutex
	events map[string][]string // "<kind> <tenant>/<ns>/<name>" -> event types with a detail
	last   map[string]runtime.Object
}

func newRecorder() *recorder {
	return &recorder{events: map[string][]string{}, last: map[string]runtime.Object{}}
}

func (r *recorder) key(kind string, o any) string {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m := o.(metav1.Object)
	return fmt.Sprintf("%s %s/%s/%s", kind, tenancy.TenantOf(m), m.GetNamespace(), m.GetName())
}

func (r *recorder) handler(kind string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { r.add(kind, "add", o) },
		UpdateFunc: func(_, o any) {
			r.add(kind, "update", o)
		},
		DeleteFunc: func(o any) { r.add(kind, "delete", o) },
	}
}

func (r *recorder) add(kind, ev string, o any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.key(kind, o)
	r.events[k] = append(r.events[k], ev)
	if ro, ok := o.(runtime.Object); ok {
		r.last[k] = ro
	}
}

func (r *recorder) saw(key, ev string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events[key] {
		if e == ev {
			return true
		}
	}
	return false
}

func (r *recorder) lastOf(key string) runtime.Object {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[key]
}

// tpClient is a tenant-preserving clientset for one TP.
func tpClient(t testing.TB, tp *faketp.TP) *partitiontest.Clients {
	t.Helper()
	cs, err := partitiontest.NewClients(tenancyk8s.WrapConfig(tp.RESTConfig()), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// everyTenant rewrites client-go's lists and watches across namespaces
// (/api/v1/pods) to Arktos's every-tenant path (/api/v1/tenants/all/pods):
// a short path is only the caller's tenant.
type everyTenant struct{ base http.RoundTripper }

var acrossNamespaces = regexp.MustCompile(`^/(api/v1|apis/[^/]+/[^/]+)/([a-z]+)$`)

func (e everyTenant) RoundTrip(req *http.Request) (*http.Response, error) {
	if m := acrossNamespaces.FindStringSubmatch(req.URL.Path); req.Method == http.MethodGet && m != nil && m[2] != "tenants" {
		req = req.Clone(req.Context())
		req.URL.Path = "/" + m[1] + "/tenants/all/" + m[2]
	}
	return e.base.RoundTrip(req)
}

// everyTenantClient is tpClient whose lists and watches span every tenant.
func everyTenantClient(t testing.TB, tp *faketp.TP) *partitiontest.Clients {
	t.Helper()
	cfg := tenancyk8s.WrapConfig(tp.RESTConfig())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return everyTenant{rt} })
	cs, err := partitiontest.NewClients(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// startInformers runs pod, service, endpoints and configmap informers of
// every tenant on every TP, each feeding its own recorder. Each is what
// client-go's informer factory builds for the kind (informers'
// Core().V1().Pods() and so on): a cache.ListWatch over the typed client's
// List and Watch, and a shared index informer; the watch-list gate acts
// on it the same way.
func startInformers(t *testing.T, tps []*faketp.TP) []*recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		running.Wait()
	})
	var recs []*recorder
	for _, tp := range tps {
		rec := newRecorder()
		core := everyTenantClient(t, tp).CoreV1()
		pods, svcs, eps, cms := core.Pods(metav1.NamespaceAll), core.Services(metav1.NamespaceAll), core.Endpoints(metav1.NamespaceAll), core.ConfigMaps(metav1.NamespaceAll)
		var synced []cache.InformerSynced
		for kind, inf := range map[string]cache.SharedIndexInformer{
			"pod":       cache.NewSharedIndexInformer(partitiontest.ListWatch(pods.List, pods.Watch), &corev1.Pod{}, 0, cache.Indexers{}),
			"service":   cache.NewSharedIndexInformer(partitiontest.ListWatch(svcs.List, svcs.Watch), &corev1.Service{}, 0, cache.Indexers{}),
			"endpoints": cache.NewSharedIndexInformer(partitiontest.ListWatch(eps.List, eps.Watch), &corev1.Endpoints{}, 0, cache.Indexers{}),
			"configmap": cache.NewSharedIndexInformer(partitiontest.ListWatch(cms.List, cms.Watch), &corev1.ConfigMap{}, 0, cache.Indexers{}),
		} {
			if _, err := inf.AddEventHandler(rec.handler(kind)); err != nil {
				t.Fatal(err)
			}
			running.Go(func() { inf.RunWithContext(ctx) })
			synced = append(synced, inf.HasSynced)
		}
		if !cache.WaitForCacheSync(ctx.Done(), synced...) {
			t.Fatalf("%s: the informers did not sync", tp.Name())
		}
		recs = append(recs, rec)
	}
	return recs
}

func TestInformersSeeAddUpdateDeleteAcrossThreeTPs(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("WatchListClient=%v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			tps := testInformers(t, watchListMode(watchList))
			// With the gate on, client-go's reflector streams the initial
			// state over a watch (sendInitialEvents) and never lists; with
			// it off, it lists first.
			for _, tp := range tps {
				lists := tp.RequestCount("list", "pods")
				if watchList && lists != 0 {
					t.Errorf("%s: %d pod lists with watch-list on; the initial state should come by watch", tp.Name(), lists)
				}
				if !watchList && lists == 0 {
					t.Errorf("%s: no pod list with watch-list off", tp.Name())
				}
			}
		})
	}
}

// namespace is a Namespace object of tenant.
func namespace(tenant, name string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	tenancy.SetTenant(ns, tenant)
	return ns
}

// watchListMode is the TP mode that serves client-go's watch-list when the
// client uses it; Arktos's (the default) otherwise.
func watchListMode(clientUsesIt bool) faketp.WatchListMode {
	if clientUsesIt {
		return faketp.WatchListServed
	}
	return faketp.WatchListIgnored
}

func testInformers(t *testing.T, mode faketp.WatchListMode) []*faketp.TP {
	c := faketp.StartT(t, faketp.Options{Partitions: 3, WatchList: mode})
	tps := c.TPs()
	// Objects that exist before the informers start arrive by list (or
	// by the initial events of a watch-list).
	// Seeding creates tenant t<i> and its default namespace; the test
	// writes in ns1 of both tenants.
	for i, tp := range tps {
		tenant := fmt.Sprintf("t%d", i+1)
		if err := tp.Seed(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "pre", Namespace: "default", Annotations: map[string]string{tenancy.TenantAnnotation: tenant}},
		}, namespace(tenancy.SystemTenant, "ns1"), namespace(tenant, "ns1")); err != nil {
			t.Fatal(err)
		}
	}
	recs := startInformers(t, tps)
	for i := range tps {
		testbin.Eventually(t, "the seeded configmap", func() bool { return recs[i].saw(fmt.Sprintf("configmap t%d/default/pre", i+1), "add") })
	}

	ctx := context.Background()
	for i, tp := range tps {
		cs := tpClient(t, tp)
		tenant := fmt.Sprintf("t%d", i+1)
		for _, tn := range []string{tenancy.SystemTenant, tenant} {
			tctx := tenancyk8s.WithTenant(ctx, tn)
			name := "x-" + tn
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "x"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
			if _, err := cs.CoreV1().Pods("ns1").Create(tctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: creating pod: %v", tp.Name(), err)
			}
			// No selector: the client writes the service's Endpoints.
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
			if _, err := cs.CoreV1().Services("ns1").Create(tctx, svc, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: creating service: %v", tp.Name(), err)
			}
			eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name},
				Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.244.0.1"}}, Ports: []corev1.EndpointPort{{Port: 80}}}}}
			if _, err := cs.CoreV1().Endpoints("ns1").Create(tctx, eps, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: creating endpoints: %v", tp.Name(), err)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "1"}}
			if _, err := cs.CoreV1().ConfigMaps("ns1").Create(tctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: creating configmap: %v", tp.Name(), err)
			}
		}
	}
	kinds := []string{"pod", "service", "endpoints", "configmap"}
	for i := range tps {
		for _, tn := range []string{tenancy.SystemTenant, fmt.Sprintf("t%d", i+1)} {
			for _, kind := range kinds {
				key := fmt.Sprintf("%s %s/ns1/x-%s", kind, tn, tn)
				testbin.Eventually(t, fmt.Sprintf("tp%d add %s", i+1, key), func() bool { return recs[i].saw(key, "add") })
			}
		}
		// Nothing of another TP leaks in.
		for j := range tps {
			if j != i && recs[i].saw(fmt.Sprintf("pod t%d/ns1/x-t%d", j+1, j+1), "add") {
				t.Fatalf("tp%d's informer saw tp%d's pod", i+1, j+1)
			}
		}
	}

	// Updates, through the tenant path for the regular tenant.
	for i, tp := range tps {
		cs := tpClient(t, tp)
		tn := fmt.Sprintf("t%d", i+1)
		tctx := tenancyk8s.WithTenant(ctx, tn)
		cm, err := cs.CoreV1().ConfigMaps("ns1").Get(tctx, "x-"+tn, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := tenancy.TenantOf(cm); got != tn {
			t.Fatalf("get returned tenant %q, want %q", got, tn)
		}
		cm.Data["v"] = "2"
		if _, err := cs.CoreV1().ConfigMaps("ns1").Update(tctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod, err := cs.CoreV1().Pods("ns1").Get(tctx, "x-"+tn, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.PodIP = fmt.Sprintf("10.244.%d.9", i)
		if _, err := cs.CoreV1().Pods("ns1").UpdateStatus(tctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc, err := cs.CoreV1().Services("ns1").Get(tctx, "x-"+tn, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Labels = map[string]string{"changed": "yes"}
		if _, err := cs.CoreV1().Services("ns1").Update(tctx, svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eps, err := cs.CoreV1().Endpoints("ns1").Get(tctx, "x-"+tn, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		eps.Subsets[0].Addresses[0].IP = "10.244.0.2"
		if _, err := cs.CoreV1().Endpoints("ns1").Update(tctx, eps, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range tps {
		tn := fmt.Sprintf("t%d", i+1)
		for _, kind := range kinds {
			key := fmt.Sprintf("%s %s/ns1/x-%s", kind, tn, tn)
			testbin.Eventually(t, "update of "+key, func() bool { return recs[i].saw(key, "update") })
		}
		cm := recs[i].lastOf(fmt.Sprintf("configmap %s/ns1/x-%s", tn, tn)).(*corev1.ConfigMap)
		if cm.Data["v"] != "2" || tenancy.TenantOf(cm) != tn {
			t.Fatalf("tp%d: informer has configmap %v in tenant %q", i+1, cm.Data, tenancy.TenantOf(cm))
		}
		pod := recs[i].lastOf(fmt.Sprintf("pod %s/ns1/x-%s", tn, tn)).(*corev1.Pod)
		if pod.Status.PodIP != fmt.Sprintf("10.244.%d.9", i) {
			t.Fatalf("tp%d: pod status not updated: %+v", i+1, pod.Status)
		}
	}

	// Deletes.
	for i, tp := range tps {
		cs := tpClient(t, tp)
		tn := fmt.Sprintf("t%d", i+1)
		tctx := tenancyk8s.WithTenant(ctx, tn)
		name := "x-" + tn
		for _, del := range []func() error{
			func() error { return cs.CoreV1().Pods("ns1").Delete(tctx, name, metav1.DeleteOptions{}) },
			// Endpoints first: the endpoints controller deletes those of a
			// deleted service, as kube-controller-manager does.
			func() error { return cs.CoreV1().Endpoints("ns1").Delete(tctx, name, metav1.DeleteOptions{}) },
			func() error { return cs.CoreV1().Services("ns1").Delete(tctx, name, metav1.DeleteOptions{}) },
			func() error { return cs.CoreV1().ConfigMaps("ns1").Delete(tctx, name, metav1.DeleteOptions{}) },
		} {
			if err := del(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range tps {
		tn := fmt.Sprintf("t%d", i+1)
		for _, kind := range kinds {
			key := fmt.Sprintf("%s %s/ns1/x-%s", kind, tn, tn)
			testbin.Eventually(t, "delete of "+key, func() bool { return recs[i].saw(key, "delete") })
			if sys := fmt.Sprintf("%s system/ns1/x-system", kind); recs[i].saw(sys, "delete") {
				t.Fatalf("tp%d: %s deleted, but only tenant %s's was", i+1, sys, tn)
			}
		}
	}
	return tps
}

// arktosClient turns client-go's watch-list off for the test, as tpkit's
// programs must against Arktos, which ignores it (the TPs' default).
func arktosClient(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
}

func TestSameKeyInTwoTPsStaysDistinct(t *testing.T) {
	arktosClient(t)
	c := faketp.StartT(t, faketp.Options{Partitions: 2})
	tps := c.TPs()
	ctx := context.Background()
	for i, tp := range tps {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns"}, Data: map[string]string{"tp": tp.Name()}}
		if _, err := tpClient(t, tp).CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("tp%d: %v", i+1, err)
		}
	}
	recs := startInformers(t, tps)
	keys := map[tenancy.Key]string{}
	for i, tp := range tps {
		testbin.Eventually(t, "kube-dns configmap", func() bool { return recs[i].lastOf("configmap system/kube-system/kube-dns") != nil })
		o := recs[i].lastOf("configmap system/kube-system/kube-dns")
		cm, ok := o.(*corev1.ConfigMap)
		if !ok {
			t.Fatalf("%s: informer has no system/kube-system/kube-dns", tp.Name())
		}
		if cm.Data["tp"] != tp.Name() {
			t.Fatalf("%s's informer holds %s's configmap", tp.Name(), cm.Data["tp"])
		}
		k := tenancy.Key{Partition: tp.Name(), Tenant: tenancy.TenantOf(cm), Namespace: cm.Namespace, Name: cm.Name}
		keys[k] = string(cm.UID)
	}
	if len(keys) != 2 {
		t.Fatalf("want two distinct keys, got %v", keys)
	}
	var uids []string
	for _, u := range keys {
		uids = append(uids, u)
	}
	if uids[0] == uids[1] {
		t.Fatalf("the two TPs gave the same UID %s", uids[0])
	}
	// Deleting in one TP leaves the other alone.
	if err := tpClient(t, tps[0]).CoreV1().ConfigMaps("kube-system").Delete(ctx, "kube-dns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "delete in tp1", func() bool { return recs[0].saw("configmap system/kube-system/kube-dns", "delete") })
	if _, err := tpClient(t, tps[1]).CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); err != nil {
		t.Fatalf("tp2 lost its configmap: %v", err)
	}
	if recs[1].saw("configmap system/kube-system/kube-dns", "delete") {
		t.Fatal("tp2's informer saw tp1's delete")
	}
}

func TestReflectorRecoversFromGoneAndClosedWatches(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("WatchListClient=%v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			// A short history, so that one batch of writes overflows it.
			c := faketp.StartT(t, faketp.Options{Partitions: 1, History: 4, WatchList: watchListMode(watchList)})
			tp := c.TPs()[0]
			recs := startInformers(t, c.TPs())
			rec := recs[0]
			cs := tpClient(t, tp)
			ctx := context.Background()
			mk := func(name string) *corev1.Pod {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
			}

			// A watch the server closes: the reflector watches again and
			// misses nothing.
			watches := tp.RequestCount("watch", "pods")
			tp.CloseWatches()
			if _, err := cs.CoreV1().Pods("default").Create(ctx, mk("after-close"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			testbin.Eventually(t, "pod created after the watch closed", func() bool { return rec.saw("pod system/default/after-close", "add") })
			testbin.Eventually(t, "a new pod watch", func() bool { return tp.RequestCount("watch", "pods") > watches })

			// A 410: ten pods written in one commit overflow the history
			// of four events before any watcher can read them, so the open
			// watch ends with an Expired ERROR event and the reflector must
			// relist to find them.
			expired := tp.ExpiredWatches()
			var batch []any
			for i := 0; i < 10; i++ {
				batch = append(batch, mk(fmt.Sprintf("batch-%d", i)))
			}
			if err := tp.Seed(batch...); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10; i++ {
				key := fmt.Sprintf("pod system/default/batch-%d", i)
				testbin.Eventually(t, key+" after a 410", func() bool { return rec.saw(key, "add") })
			}
			if tp.ExpiredWatches() == expired {
				t.Fatal("no watch was answered 410; the test did not exercise the relist")
			}

			// An outage that drops connections, during which an object
			// appears and the history is compacted.
			if err := tp.SetOutage(ctx, faketp.OutageRefuse); err != nil {
				t.Fatal(err)
			}
			if err := tp.Seed(mk("during-outage")); err != nil {
				t.Fatal(err)
			}
			tp.Compact()
			if err := tp.SetOutage(ctx, faketp.OutageNone); err != nil {
				t.Fatal(err)
			}
			testbin.Eventually(t, "pod created during the outage", func() bool { return rec.saw("pod system/default/during-outage", "add") })

			// And the informer keeps following changes.
			if err := cs.CoreV1().Pods("default").Delete(ctx, "after-close", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			testbin.Eventually(t, "delete after recovery", func() bool { return rec.saw("pod system/default/after-close", "delete") })
		})
	}
}

func TestRestartWithDataDirKeepsObjectsAndInformerResumes(t *testing.T) {
	arktosClient(t)
	dir := t.TempDir()
	c := faketp.StartT(t, faketp.Options{Partitions: 1, DataDir: dir})
	tp := c.TPs()[0]
	if err := tp.Seed(namespace("acme", "web")); err != nil { // and tenant acme
		t.Fatal(err)
	}
	ctx := context.Background()
	cs := tpClient(t, tp)
	tctx := tenancyk8s.WithTenant(ctx, "acme")
	created, err := cs.CoreV1().ConfigMaps("web").Create(tctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recs := startInformers(t, c.TPs())
	rec := recs[0]
	testbin.Eventually(t, "kept configmap in the informer", func() bool { return rec.saw("configmap acme/web/kept", "add") })
	rvBefore := tp.Store().RV()
	url := tp.URL()

	if err := tp.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if tp.URL() != url {
		t.Fatalf("restart moved the TP from %s to %s", url, tp.URL())
	}
	if got := tp.Store().RV(); got != rvBefore {
		t.Fatalf("resourceVersion after restart = %d, want %d", got, rvBefore)
	}
	got, err := cs.CoreV1().ConfigMaps("web").Get(tctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("object lost in restart: %v", err)
	}
	if got.UID != created.UID || got.ResourceVersion != created.ResourceVersion || tenancy.TenantOf(got) != "acme" {
		t.Fatalf("object changed in restart: %+v", got.ObjectMeta)
	}
	if _, err := cs.CoreV1().ConfigMaps("web").Create(tctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "informer resumed after restart", func() bool { return rec.saw("configmap acme/web/new", "add") })
	if rec.saw("configmap acme/web/kept", "delete") {
		t.Fatal("informer saw the kept object deleted across the restart")
	}
	// A second cluster on the same data dir (a new process) sees it too.
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	c2 := faketp.StartT(t, faketp.Options{Partitions: 1, DataDir: dir})
	got2, err := tpClient(t, c2.TPs()[0]).CoreV1().ConfigMaps("web").Get(tctx, "kept", metav1.GetOptions{})
	if err != nil || got2.UID != created.UID {
		t.Fatalf("a new process on the data dir: %v %v", got2, err)
	}
	if c2.TPs()[0].Store().RV() < rvBefore {
		t.Fatal("resourceVersion went backwards in a new process")
	}
}

func TestWatchListModes(t *testing.T) {
	const q = "/api/v1/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}

	t.Run("rejected: client-go falls back to list", func(t *testing.T) {
		clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, true)
		c := faketp.StartT(t, faketp.Options{WatchList: faketp.WatchListRejected})
		tp := c.TPs()[0]
		if err := tp.Seed(pod); err != nil {
			t.Fatal(err)
		}
		if r := do(t, tp, "GET", q, "", ""); r.code != 422 {
			t.Fatalf("watch-list request: %d", r.code)
		}
		rec := startInformers(t, c.TPs())[0]
		testbin.Eventually(t, "the pod through the fallback list", func() bool { return rec.saw("pod system/default/p", "add") })
		if tp.RequestCount("list", "pods") == 0 {
			t.Fatal("the reflector did not fall back to list")
		}
	})

	t.Run("ignored: as Arktos, no initial-events-end bookmark", func(t *testing.T) {
		c := faketp.StartT(t, faketp.Options{WatchList: faketp.WatchListIgnored, BookmarkInterval: 100 * time.Millisecond})
		tp := c.TPs()[0]
		if err := tp.Seed(pod); err != nil {
			t.Fatal(err)
		}
		evs := watchEvents(t, tp, q, 1000)
		if len(evs) < 2 || evType(evs[0]) != "ADDED" {
			t.Fatalf("events: %v", evs)
		}
		for _, e := range evs {
			if bytes.Contains(e["object"], []byte(metav1.InitialEventsAnnotationKey)) {
				t.Fatalf("an Arktos-like TP sent the initial-events-end bookmark: %s", e["object"])
			}
		}
		// With the feature off, as tpkit's programs must run against
		// Arktos, informers list and sync.
		clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
		rec := startInformers(t, c.TPs())[0]
		testbin.Eventually(t, "the pod", func() bool { return rec.saw("pod system/default/p", "add") })
	})
}

package kubeletcache_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tpkit-dev/tpkit/internal/partitiontest"
	"github.com/tpkit-dev/tpkit/pkg/faketp"
	"github.com/tpkit-dev/tpkit/pkg/kubeletcache"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

// clock is a settable clock for TTL and idle tests.
type clock struct{ off atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) advance(d time.Duration) { c.off.Add(int64(d)) }

func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if t.Context().Err() != nil {
			t.Fatalf("test ended waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func withTenant[T interface{ SetAnnotations(map[string]string) }](obj T, tenant string) T {
	if tenant != "" {
		tenancy.SetTenant(any(obj).(metav1.Object), tenant)
	}
	return obj
}

func configMap(tenant, ns, name, value string) *corev1.ConfigMap {
	return withTenant(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"from": value}}, tenant)
}

func secret(tenant, ns, name, value string) *corev1.Secret {
	return withTenant(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"from": []byte(value)}}, tenant)
}

// podUsing is a pod that mounts configmap cm and secret sec and reads env
// from envcm.
func podUsing(tenant, ns, name, uid string, cms ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	c := corev1.Container{Name: "c", Image: "busybox"}
	for i, cm := range cms {
		p.Spec.Volumes = append(p.Spec.Volumes,
			corev1.Volume{Name: fmt.Sprint("cm", i), VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}},
			corev1.Volume{Name: fmt.Sprint("sec", i), VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: cm}}},
		)
	}
	p.Spec.Containers = []corev1.Container{c}
	return withTenant(p, tenant)
}

// env is three fake TPs with the same system-tenant configmap and secret
// names holding different data, a tracker that knows the pods' origins, and
// the partition set.
type env struct {
	cluster  *faketp.Cluster
	set      *partition.Set
	tracker  *tporigin.Tracker
	chooser  *tporigin.ClientChooser // the tracker's decisions, as the managers take them
	clock    *clock
	podA     *corev1.Pod // system tenant, from tp1
	podB     *corev1.Pod // same tenant/namespace/name, from tp2
	podC     *corev1.Pod // and from tp3
	podT     *corev1.Pod // regular tenant t1, lives in tp2
	podGhost *corev1.Pod // origin unknown
}

func newEnv(t *testing.T) *env { return newEnvTB(t) }

func newEnvTB(t testing.TB) *env {
	t.Helper()
	e := &env{cluster: faketp.StartT(t, faketp.Options{Partitions: 3}), clock: &clock{}}
	tp1, tp2, tp3 := e.cluster.TP("tp1"), e.cluster.TP("tp2"), e.cluster.TP("tp3")
	for _, tp := range []*faketp.TP{tp1, tp2, tp3} {
		if err := tp.Seed(
			configMap("", "kube-system", "cfg", tp.Name()),
			secret("", "kube-system", "cfg", "secret-"+tp.Name()),
			configMap("", "kube-system", "frozen", "frozen-"+tp.Name()),
			secret("", "kube-system", "frozen", "frozen-"+tp.Name()),
			// Decoys: same names in the system tenant and in tp1's t1.
			configMap("", "default", "app", "system-"+tp.Name()),
			secret("", "default", "app", "system-"+tp.Name()),
		); err != nil {
			t.Fatal(err)
		}
	}
	if err := tp1.Seed(configMap("t1", "default", "app", "t1-in-wrong-tp"), secret("t1", "default", "app", "t1-in-wrong-tp")); err != nil {
		t.Fatal(err)
	}
	if err := tp2.Seed(configMap("t1", "default", "app", "t1-tp2"), secret("t1", "default", "app", "t1-tp2")); err != nil {
		t.Fatal(err)
	}
	var err error
	e.set, err = partition.NewFromConfigs([]string{"tp1", "tp2", "tp3"}, []*rest.Config{tp1.RESTConfig(), tp2.RESTConfig(), tp3.RESTConfig()}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.tracker, err = tporigin.Open(tporigin.Options{Partitions: []string{"tp1", "tp2", "tp3"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.tracker.Close() })
	e.chooser = tporigin.NewClientChooser(e.tracker)
	e.podA = podUsing("", "kube-system", "ds-x", "uid-a", "cfg", "missing")
	e.podB = podUsing("", "kube-system", "ds-x", "uid-b", "cfg", "missing")
	e.podC = podUsing("", "kube-system", "ds-x", "uid-c", "cfg")
	e.podT = podUsing("t1", "default", "web", "uid-t", "app")
	e.podGhost = podUsing("", "kube-system", "ghost", "uid-ghost", "cfg")
	for _, o := range []tporigin.Observation{
		{UID: "uid-a", Kind: tporigin.KindPod, Partition: "tp1"},
		{UID: "uid-b", Kind: tporigin.KindPod, Partition: "tp2"},
		{UID: "uid-c", Kind: tporigin.KindPod, Partition: "tp3"},
		// t1 is known to live in tp2 from another of its objects; podT's
		// own origin is not recorded.
		{UID: "uid-t-svc", Kind: tporigin.KindService, Partition: "tp2", Tenant: "t1"},
	} {
		if _, err := e.tracker.Observe(o); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) options(s kubeletcache.Strategy) kubeletcache.Options {
	return kubeletcache.Options{Strategy: s, TTL: time.Minute, MaxIdle: time.Hour, SyncTimeout: time.Second, Now: e.clock.now}
}

// managers builds both managers and registers podA, podB and podT.
func (e *env) managers(t *testing.T, s kubeletcache.Strategy) (*kubeletcache.ConfigMapManager, *kubeletcache.SecretManager) {
	t.Helper()
	cms, err := kubeletcache.NewConfigMapManager(e.set, e.chooser, e.options(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cms.Close)
	secs, err := kubeletcache.NewSecretManager(e.set, e.chooser, e.options(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(secs.Close)
	for _, p := range []*corev1.Pod{e.podA, e.podB, e.podC, e.podT} {
		if err := cms.RegisterPod(p); err != nil {
			t.Fatal(err)
		}
		if err := secs.RegisterPod(p); err != nil {
			t.Fatal(err)
		}
	}
	return cms, secs
}

// getCM, getSecret and freshness read name for pod in the pod's tenant and
// namespace, as the kubelet does: Arktos's (tenant, namespace, name, podUID).
func getCM(m *kubeletcache.ConfigMapManager, pod *corev1.Pod, name string) (*corev1.ConfigMap, error) {
	return m.GetConfigMap(tenancy.TenantOf(pod), pod.Namespace, name, pod.UID)
}

func getSecret(m *kubeletcache.SecretManager, pod *corev1.Pod, name string) (*corev1.Secret, error) {
	return m.GetSecret(tenancy.TenantOf(pod), pod.Namespace, name, pod.UID)
}

func freshness(m *kubeletcache.ConfigMapManager, pod *corev1.Pod, name string) (kubeletcache.Freshness, error) {
	return m.Freshness(tenancy.TenantOf(pod), pod.Namespace, name, pod.UID)
}

func cmValue(t *testing.T, m *kubeletcache.ConfigMapManager, pod *corev1.Pod, name string) string {
	t.Helper()
	cm, err := getCM(m, pod, name)
	if err != nil {
		t.Fatalf("GetConfigMap(%s, %s): %v", pod.Name, name, err)
	}
	return cm.Data["from"]
}

func secretValue(t *testing.T, m *kubeletcache.SecretManager, pod *corev1.Pod, name string) string {
	t.Helper()
	s, err := getSecret(m, pod, name)
	if err != nil {
		t.Fatalf("GetSecret(%s, %s): %v", pod.Name, name, err)
	}
	return string(s.Data["from"])
}

var strategies = []kubeletcache.Strategy{kubeletcache.Get, kubeletcache.Cache, kubeletcache.Watch}

// TestEachPodGetsItsOwnTPsObjects: three system-tenant pods with equal
// tenant/namespace/name from three TPs, and a regular-tenant pod, each get
// their own TP's (and tenant's) configmaps and secrets, under every
// strategy; a name that does not exist is NotFound.
func TestEachPodGetsItsOwnTPsObjects(t *testing.T) {
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			e := newEnv(t)
			cms, secs := e.managers(t, s)
			for _, c := range []struct {
				pod        *corev1.Pod
				name, want string
			}{
				{e.podA, "cfg", "tp1"},
				{e.podB, "cfg", "tp2"},
				{e.podC, "cfg", "tp3"},
				{e.podT, "app", "t1-tp2"},
			} {
				if got := cmValue(t, cms, c.pod, c.name); got != c.want {
					t.Errorf("pod %s configmap %s = %q, want %q", c.pod.UID, c.name, got, c.want)
				}
				if got := secretValue(t, secs, c.pod, c.name); got != "secret-"+c.want && !(c.pod == e.podT && got == c.want) {
					t.Errorf("pod %s secret %s = %q, want %q's", c.pod.UID, c.name, got, c.want)
				}
			}
			if _, err := getCM(cms, e.podA, "missing"); !apierrors.IsNotFound(err) {
				t.Errorf("missing configmap: %v, want NotFound", err)
			}
			if _, err := getSecret(secs, e.podB, "missing"); !apierrors.IsNotFound(err) {
				t.Errorf("missing secret: %v, want NotFound", err)
			}
		})
	}
}

// TestUnknownPod: a pod whose origin is unknown cannot be registered, and
// reading for a pod that is not registered, or a name it does not use, is a
// clear error.
func TestUnknownPod(t *testing.T) {
	e := newEnv(t)
	cms, _ := e.managers(t, kubeletcache.Get)
	err := cms.RegisterPod(e.podGhost)
	if err == nil || !strings.Contains(err.Error(), "tenant partition is not known") || !strings.Contains(err.Error(), "uid-ghost") {
		t.Fatalf("RegisterPod(unknown origin) = %v", err)
	}
	_, err = getCM(cms, e.podGhost, "cfg")
	if err == nil || !strings.Contains(err.Error(), "not registered") || !strings.Contains(err.Error(), "uid-ghost") {
		t.Fatalf("GetConfigMap(unregistered pod) = %v", err)
	}
	_, err = getCM(cms, e.podA, "not-in-spec")
	if err == nil || !strings.Contains(err.Error(), "not referenced") {
		t.Fatalf("GetConfigMap(unreferenced name) = %v", err)
	}
	// Unregistering twice, or a pod never registered, is harmless.
	cms.UnregisterPod(e.podA)
	cms.UnregisterPod(e.podA)
	cms.UnregisterPod(e.podGhost)
	if _, err := getCM(cms, e.podA, "cfg"); err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("GetConfigMap after UnregisterPod = %v", err)
	}
	// Registering twice is idempotent.
	if err := cms.RegisterPod(e.podB); err != nil {
		t.Fatal(err)
	}
	cms.UnregisterPod(e.podB)
	if _, err := getCM(cms, e.podB, "cfg"); err == nil {
		t.Fatal("one UnregisterPod after two RegisterPod calls must drop the pod")
	}
}

// TestReadsFollowTheOrigin: every read asks the tracker's decision
// (tporigin.ClientChooser.ObjectKey) where the object lives for the pod: a
// pod reads only its own tenant's and namespace's objects, a pod whose
// origin is forgotten reads nothing (never another TP's object), and a pod
// whose origin moved must be registered again.
func TestReadsFollowTheOrigin(t *testing.T) {
	e := newEnv(t)
	cms, secs := e.managers(t, kubeletcache.Get)
	// Another tenant or namespace than the pod's: not its object.
	if _, err := cms.GetConfigMap("t1", "default", "app", e.podA.UID); err == nil || !strings.Contains(err.Error(), "not referenced") {
		t.Fatalf("podA reading t1's configmap = %v", err)
	}
	if _, err := secs.GetSecret("", "default", "cfg", e.podA.UID); err == nil || !strings.Contains(err.Error(), "not referenced") {
		t.Fatalf("podA reading another namespace's secret = %v", err)
	}
	// "" is the system tenant, as in Arktos.
	if cm, err := cms.GetConfigMap("", "kube-system", "cfg", e.podA.UID); err != nil || cm.Data["from"] != "tp1" {
		t.Fatalf("GetConfigMap with tenant \"\" = %v, %v", cm, err)
	}

	// tp3 deletes podC: its origin is forgotten, and its reads fail
	// instead of going to another TP.
	if _, err := e.tracker.Forget("uid-c", "tp3"); err != nil {
		t.Fatal(err)
	}
	if _, err := getCM(cms, e.podC, "cfg"); !errors.Is(err, tporigin.ErrUnknownPod) {
		t.Fatalf("read for a forgotten pod = %v, want tporigin.ErrUnknownPod", err)
	}

	// podB is also reported by tp3; tp2 deletes it, so tp3 is its origin
	// now, and its registration from tp2 no longer holds.
	if _, err := e.tracker.Observe(tporigin.Observation{UID: "uid-b", Kind: tporigin.KindPod, Partition: "tp3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tracker.Forget("uid-b", "tp2"); err != nil {
		t.Fatal(err)
	}
	if _, err := getCM(cms, e.podB, "cfg"); err == nil || !strings.Contains(err.Error(), "register it again") {
		t.Fatalf("read after the origin moved = %v", err)
	}
	if err := cms.RegisterPod(e.podB); err != nil {
		t.Fatal(err)
	}
	if got := cmValue(t, cms, e.podB, "cfg"); got != "tp3" {
		t.Fatalf("after registering again: %q, want tp3's", got)
	}
}

// TestUpdatesAreSeen: an update in one TP reaches only that TP's pod.
func TestUpdatesAreSeen(t *testing.T) {
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			e := newEnv(t)
			cms, secs := e.managers(t, s)
			cmValue(t, cms, e.podA, "cfg") // prime the cache
			secretValue(t, secs, e.podA, "cfg")
			p1, _ := e.set.Get("tp1")
			ctx := t.Context()
			if _, err := partitiontest.Clientset(t, p1).CoreV1().ConfigMaps("kube-system").Update(ctx, configMap("", "kube-system", "cfg", "tp1-v2"), metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := partitiontest.Clientset(t, p1).CoreV1().Secrets("kube-system").Update(ctx, secret("", "kube-system", "cfg", "tp1-v2"), metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if s == kubeletcache.Cache {
				// Within the TTL the cached answer stands; after it, the
				// update is read.
				if got := cmValue(t, cms, e.podA, "cfg"); got != "tp1" {
					t.Fatalf("within TTL: %q, want the cached tp1", got)
				}
				e.clock.advance(2 * time.Minute)
			}
			until(t, "the configmap update", func() bool { return cmValue(t, cms, e.podA, "cfg") == "tp1-v2" })
			until(t, "the secret update", func() bool { return secretValue(t, secs, e.podA, "cfg") == "tp1-v2" })
			if got := cmValue(t, cms, e.podB, "cfg"); got != "tp2" {
				t.Fatalf("tp2's pod sees %q after an update in tp1", got)
			}
			// A delete in the TP is NotFound, not the old object.
			if err := partitiontest.Clientset(t, p1).CoreV1().ConfigMaps("kube-system").Delete(ctx, "cfg", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if s == kubeletcache.Cache {
				e.clock.advance(2 * time.Minute)
			}
			until(t, "the delete", func() bool {
				_, err := getCM(cms, e.podA, "cfg")
				return apierrors.IsNotFound(err)
			})
		})
	}
}

// TestOutageServesCachedData: while a TP is down, its pods get the last
// known objects and Freshness says they are stale; NotFound stays NotFound;
// the other TP is unaffected; after the outage data is fresh again.
func TestOutageServesCachedData(t *testing.T) {
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			e := newEnv(t)
			cms, secs := e.managers(t, s)
			cmValue(t, cms, e.podA, "cfg")
			secretValue(t, secs, e.podA, "cfg")
			if _, err := getCM(cms, e.podA, "missing"); !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			tp1 := e.cluster.TP("tp1")
			if err := tp1.SetOutage(t.Context(), faketp.OutageRefuse); err != nil {
				t.Fatal(err)
			}
			e.clock.advance(2 * time.Minute) // past the Cache TTL
			until(t, "the outage to be noticed", func() bool {
				_, _ = getCM(cms, e.podA, "cfg")
				f, err := freshness(cms, e.podA, "cfg")
				return err == nil && f.Stale
			})
			if got := cmValue(t, cms, e.podA, "cfg"); got != "tp1" {
				t.Fatalf("during the outage: %q, want the last known tp1", got)
			}
			if got := secretValue(t, secs, e.podA, "cfg"); got != "secret-tp1" {
				t.Fatalf("secret during the outage: %q", got)
			}
			f, _ := freshness(cms, e.podA, "cfg")
			if f.Partition != "tp1" || f.LastError == nil || f.Age < 2*time.Minute && s != kubeletcache.Watch {
				t.Fatalf("Freshness during the outage = %+v", f)
			}
			if _, err := getCM(cms, e.podA, "missing"); !apierrors.IsNotFound(err) {
				t.Fatalf("missing during the outage: %v, want NotFound", err)
			}
			if got := cmValue(t, cms, e.podB, "cfg"); got != "tp2" {
				t.Fatalf("tp2 pod during tp1's outage: %q", got)
			}
			if f, _ := freshness(cms, e.podB, "cfg"); f.Stale {
				t.Fatalf("tp2's object is stale during tp1's outage: %+v", f)
			}
			// The metrics show it too.
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(cms.Collector())
			if got := testutil.ToFloat64(gaugeFor(t, reg, "tpkit_kubeletcache_stale_objects", "tp1")); got < 1 {
				t.Fatalf("stale objects in tp1 = %v, want at least 1", got)
			}
			if got := testutil.ToFloat64(gaugeFor(t, reg, "tpkit_kubeletcache_max_age_seconds", "tp1")); s != kubeletcache.Watch && got < 120 {
				t.Fatalf("max age in tp1 = %v, want at least 120 s", got)
			}
			if s == kubeletcache.Watch {
				// A reflector recycled while idle restarts into the outage:
				// the read still gets the last known object.
				e.clock.advance(2 * time.Hour)
				if n := cms.RecycleIdle(); n == 0 {
					t.Fatal("nothing recycled")
				}
				if got := cmValue(t, cms, e.podA, "cfg"); got != "tp1" {
					t.Fatalf("after recycling during the outage: %q", got)
				}
				if _, err := getCM(cms, e.podA, "missing"); !apierrors.IsNotFound(err) {
					t.Fatalf("missing after recycling during the outage: %v, want NotFound", err)
				}
			}
			if err := tp1.SetOutage(t.Context(), faketp.OutageNone); err != nil {
				t.Fatal(err)
			}
			until(t, "recovery", func() bool {
				_, _ = getCM(cms, e.podA, "cfg")
				f, _ := freshness(cms, e.podA, "cfg")
				return !f.Stale
			})
		})
	}
}

// gaugeFor gathers reg and returns the metric name{partition=tp} as a
// collector testutil can read.
func gaugeFor(t *testing.T, reg *prometheus.Registry, name, tp string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "partition" && l.GetValue() == tp {
					return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "x", Help: "x"}, func() float64 { return m.GetGauge().GetValue() })
				}
			}
		}
	}
	t.Fatalf("no %s{partition=%q}", name, tp)
	return nil
}

// watches reads a fake TP's open watch count from its /metrics.
func watches(t *testing.T, tp *faketp.TP) int {
	t.Helper()
	resp, err := http.Get(tp.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "faketp_watches{") {
			f := strings.Fields(line)
			n, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return int(n)
		}
	}
	return 0
}

// TestWatchReflectorLifecycle: reflectors run per referenced object on the
// pod's TP, stop when the last pod using them is deleted, stop for
// immutable objects, and are recycled when idle.
func TestWatchReflectorLifecycle(t *testing.T) {
	e := newEnv(t)
	tp1, tp2 := e.cluster.TP("tp1"), e.cluster.TP("tp2")
	cms, err := kubeletcache.NewConfigMapManager(e.set, e.chooser, e.options(kubeletcache.Watch))
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Close()
	if cms.Reflectors() != 0 || watches(t, tp1) != 0 {
		t.Fatal("something runs before any pod is registered")
	}
	other := podUsing("", "kube-system", "other", "uid-a2", "cfg")
	if _, err := e.tracker.Observe(tporigin.Observation{UID: "uid-a2", Kind: tporigin.KindPod, Partition: "tp1"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{e.podA, other, e.podB} {
		if err := cms.RegisterPod(p); err != nil {
			t.Fatal(err)
		}
	}
	// podA and other share tp1's cfg; podA and podB each have "missing".
	if n := cms.Reflectors(); n != 4 {
		t.Fatalf("%d reflectors, want 4 (cfg and missing in tp1 and in tp2)", n)
	}
	cmValue(t, cms, e.podA, "cfg")
	cmValue(t, cms, e.podB, "cfg")
	until(t, "tp1's watches", func() bool { return watches(t, tp1) == 2 })

	// Deleting podA keeps cfg (other uses it) and stops tp1's "missing".
	cms.UnregisterPod(e.podA)
	if n := cms.Reflectors(); n != 3 {
		t.Fatalf("after podA: %d reflectors, want 3", n)
	}
	until(t, "tp1's missing reflector to stop", func() bool { return watches(t, tp1) == 1 })
	cms.UnregisterPod(other)
	until(t, "tp1's reflectors to stop", func() bool { return watches(t, tp1) == 0 })
	if n := cms.Reflectors(); n != 2 {
		t.Fatalf("%d reflectors, want tp2's 2", n)
	}
	cms.UnregisterPod(e.podB)
	until(t, "tp2's reflectors to stop", func() bool { return watches(t, tp2) == 0 })
	if n := cms.Reflectors(); n != 0 {
		t.Fatalf("%d reflectors after every pod is gone", n)
	}

	// Immutable: the reflector stops once the object is listed, and the
	// object is still served.
	p2, _ := e.set.Get("tp2")
	frozen := configMap("", "kube-system", "frozen", "frozen-tp2")
	yes := true
	frozen.Immutable = &yes
	if _, err := partitiontest.Clientset(t, p2).CoreV1().ConfigMaps("kube-system").Update(t.Context(), frozen, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	podF := podUsing("", "kube-system", "ds-x", "uid-b", "frozen")
	if err := cms.RegisterPod(podF); err != nil {
		t.Fatal(err)
	}
	if got := cmValue(t, cms, podF, "frozen"); got != "frozen-tp2" {
		t.Fatalf("immutable configmap = %q", got)
	}
	until(t, "the immutable object's reflector to stop", func() bool { return cms.Reflectors() == 0 && watches(t, tp2) == 0 })
	if got := cmValue(t, cms, podF, "frozen"); got != "frozen-tp2" {
		t.Fatalf("immutable configmap after its reflector stopped = %q", got)
	}
	if f, _ := freshness(cms, podF, "frozen"); f.Stale || f.Age != 0 {
		t.Fatalf("immutable object freshness = %+v", f)
	}

	// Idle: RecycleIdle stops reflectors not read for MaxIdle; a read
	// restarts them.
	if err := cms.RegisterPod(e.podB); err != nil {
		t.Fatal(err)
	}
	cmValue(t, cms, e.podB, "cfg")
	if n := cms.RecycleIdle(); n != 0 {
		t.Fatalf("recycled %d fresh reflectors", n)
	}
	e.clock.advance(2 * time.Hour)
	if n := cms.RecycleIdle(); n != 2 {
		t.Fatalf("recycled %d idle reflectors, want 2", n)
	}
	until(t, "idle watches to close", func() bool { return watches(t, tp2) == 0 })
	if got := cmValue(t, cms, e.podB, "cfg"); got != "tp2" {
		t.Fatalf("after recycling: %q", got)
	}
	if n := cms.Reflectors(); n != 1 {
		t.Fatalf("a read restarts its reflector: %d running, want 1", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { cms.Run(ctx); close(done) }()
	cancel()
	<-done
	if n := cms.Reflectors(); n != 0 {
		t.Fatalf("%d reflectors after Run ended", n)
	}
	until(t, "all watches to close", func() bool { return watches(t, tp1)+watches(t, tp2) == 0 })
	if err := cms.RegisterPod(e.podA); err == nil {
		t.Fatal("RegisterPod after Close succeeded")
	}
}

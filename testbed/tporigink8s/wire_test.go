package tporigink8s_test

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
	tporigink8s "github.com/tpkit-dev/tpkit/testbed/tporigink8s"
)

func pod(tenant, ns, name, uid, node string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	tenancy.SetTenant(p, tenant)
	return p
}

// TestWireAgainstFakeTPs feeds a tracker from two fake TPs through a
// partition set: node-filtered pods and services, a UID reported by both,
// an origin that a TP no longer has (pruned after sync), a delete, and a
// restart from the file.
func TestWireAgainstFakeTPs(t *testing.T) {
	cluster := faketp.StartT(t, faketp.Options{Partitions: 2})
	tp1, tp2 := cluster.TP("tp1"), cluster.TP("tp2")
	const (
		uidA     = "0a000000-0000-4000-8000-00000000000a" // in tp1 and (conflict) tp2
		uidB     = "0b000000-0000-4000-8000-00000000000b" // tp1, another node
		uidC     = "0c000000-0000-4000-8000-00000000000c" // tp2, tenant t1
		uidStale = "0d000000-0000-4000-8000-00000000000d" // in the file, gone from tp1
		uidS     = "0e000000-0000-4000-8000-00000000000e" // service in tp1
		uidE     = "0f000000-0000-4000-8000-00000000000f" // endpoints in tp2
	)
	if err := tp1.Seed(
		pod("system", "kube-system", "ds-x", uidA, "n1"),
		pod("system", "kube-system", "ds-y", uidB, "n2"),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns", UID: uidS}},
	); err != nil {
		t.Fatal(err)
	}
	if err := tp2.Seed(
		pod("system", "kube-system", "ds-x", uidA, "n1"),
		pod("t1", "default", "web", uidC, "n1"),
		// Endpoints live as long as their service (Arktos's endpoints
		// controller deletes those of a missing one).
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"}},
		&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns", UID: uidE}},
	); err != nil {
		t.Fatal(err)
	}

	// What the node knew before this run: A and a pod since deleted.
	path := filepath.Join(t.TempDir(), "origins.db")
	names := []string{"tp1", "tp2"}
	pre, err := tporigin.Open(tporigin.Options{Path: path, Partitions: names})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{uidA, uidStale} {
		if _, err := pre.Record(t.Context(), tporigin.Observation{UID: u, Kind: tporigin.KindPod, Partition: "tp1"}); err != nil {
			t.Fatal(err)
		}
	}
	pre.Close()

	tr, err := tporigin.Open(tporigin.Options{Path: path, Partitions: names})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// Known before any TP is reachable.
	if tp, ok := tr.OriginOf(uidStale); !ok || tp != "tp1" {
		t.Fatalf("origin of a pod from the file = %q, %v", tp, ok)
	}
	set, err := partition.NewFromConfigs(names, []*rest.Config{tp1.RESTConfig(), tp2.RESTConfig()}, partition.Options{Endpoints: informer.EndpointsCore})
	if err != nil {
		t.Fatal(err)
	}
	w, err := tporigink8s.Wire(tr, set, tporigink8s.WireOptions{NodeName: "n1", Services: true, Endpoints: true, PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go tr.Run(ctx)
	set.Start(ctx)
	w.Start(ctx)
	testbin.Eventually(t, "the wiring to sync", w.HasSynced)

	want := map[string]string{uidA: "tp1", uidC: "tp2", uidS: "tp1", uidE: "tp2", uidB: "", uidStale: ""}
	for u, tp := range want {
		got, ok := tr.OriginOf(u)
		if tp == "" && ok || tp != "" && got != tp {
			t.Errorf("OriginOf(%s) = %q, %v; want %q", u, got, ok, tp)
		}
	}
	if o, _ := tr.Origin(uidS); o.Kind != tporigin.KindService {
		t.Errorf("service origin = %+v", o)
	}
	if o, _ := tr.Origin(uidE); o.Kind != tporigin.KindEndpoints {
		t.Errorf("endpoints origin = %+v", o)
	}
	if tp, ok := tr.PartitionOfTenant("t1"); !ok || tp != "tp2" {
		t.Errorf("PartitionOfTenant(t1) = %q, %v", tp, ok)
	}

	// tp1 deletes A: tp2, which reports it too, becomes its origin.
	if err := partitiontest.Clientset(t, set.Partitions()[0]).CoreV1().Pods("kube-system").Delete(ctx, "ds-x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "A to move to tp2", func() bool { tp, _ := tr.OriginOf(uidA); return tp == "tp2" })
	// tp2 deletes its tenant pod: forgotten.
	if err := partitiontest.Clientset(t, set.Partitions()[1]).CoreV1().Pods("default").Delete(tenancyk8s.WithTenant(ctx, "t1"), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "C to be forgotten", func() bool { _, ok := tr.OriginOf(uidC); return !ok })
	if _, ok := tr.PartitionOfTenant("t1"); ok {
		t.Error("t1 still has a partition after its only object was deleted")
	}

	cancel()
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr.Close()
	again, err := tporigin.Open(tporigin.Options{Path: path, Partitions: names})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	// Each TP's master service default/kubernetes and its Endpoints: 4 more.
	if again.Len() != 8 {
		t.Fatalf("after restart: %d origins, want 8 (A from tp2, the two services, the endpoints, both TPs' master services and Endpoints)", again.Len())
	}
	if tp, _ := again.OriginOf(uidA); tp != "tp2" {
		t.Fatalf("after restart A is from %q", tp)
	}
}

// TestWireKeepsTenantsApart: two regular tenants of one TP each have a pod
// and a service with the same namespace and name. Upstream informer stores
// key by namespace/name only, so one would hide the other and be pruned;
// every origin must stay, and deleting one must leave the other.
func TestWireKeepsTenantsApart(t *testing.T) {
	cluster := faketp.StartT(t, faketp.Options{Partitions: 1})
	tp1 := cluster.TP("tp1")
	const (
		podAcme  = "1a000000-0000-4000-8000-00000000001a"
		podZeta  = "1b000000-0000-4000-8000-00000000001b"
		svcAcme  = "1c000000-0000-4000-8000-00000000001c"
		svcZeta  = "1d000000-0000-4000-8000-00000000001d"
		podOther = "1e000000-0000-4000-8000-00000000001e" // zeta, another node
	)
	svc := func(tenant, uid string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID(uid)}}
		tenancy.SetTenant(s, tenant)
		return s
	}
	if err := tp1.Seed(
		pod("acme", "default", "web-0", podAcme, "n1"),
		pod("zeta", "default", "web-0", podZeta, "n1"),
		pod("zeta", "default", "web-1", podOther, "n2"),
		svc("acme", svcAcme), svc("zeta", svcZeta),
	); err != nil {
		t.Fatal(err)
	}
	tr, err := tporigin.Open(tporigin.Options{Partitions: []string{"tp1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	set, err := partition.NewFromConfigs([]string{"tp1"}, []*rest.Config{tp1.RESTConfig()}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := tporigink8s.Wire(tr, set, tporigink8s.WireOptions{NodeName: "n1", Services: true, PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go tr.Run(ctx)
	set.Start(ctx)
	w.Start(ctx)
	testbin.Eventually(t, "the wiring to sync", w.HasSynced)

	for _, u := range []string{podAcme, podZeta, svcAcme, svcZeta} {
		if tp, ok := tr.OriginOf(u); !ok || tp != "tp1" {
			t.Errorf("OriginOf(%s) = %q, %v after sync; want tp1", u, tp, ok)
		}
	}
	if _, ok := tr.OriginOf(podOther); ok {
		t.Errorf("a pod of another node has an origin")
	}

	c := partitiontest.Clientset(t, set.Partitions()[0])
	if err := c.CoreV1().Services("default").Delete(tenancyk8s.WithTenant(ctx, "acme"), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Pods("default").Delete(tenancyk8s.WithTenant(ctx, "zeta"), "web-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "the deleted objects to be forgotten", func() bool {
		_, s := tr.OriginOf(svcAcme)
		_, p := tr.OriginOf(podZeta)
		return !s && !p
	})
	for _, u := range []string{podAcme, svcZeta} {
		if tp, ok := tr.OriginOf(u); !ok || tp != "tp1" {
			t.Errorf("OriginOf(%s) = %q, %v after the other tenant's delete; want tp1", u, tp, ok)
		}
	}
}

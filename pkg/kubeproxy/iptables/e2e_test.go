package iptables

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/tpkit-dev/tpkit/internal/partitiontest"
	"github.com/tpkit-dev/tpkit/pkg/faketp"
	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/pkg/kubeproxy/k8s"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// svcObj is a Service with one TCP port, to seed a fake TP.
func svcObj(tenant, ns, name, ip string, portName string, p int32) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{{Name: portName, Port: p, Protocol: corev1.ProtocolTCP}}},
	}
	tenancy.SetTenant(s, tenant)
	return s
}

// endpoints are the Endpoints of a selector-less service: no controller
// touches them.
func endpoints(tenant, ns, service, portName string, p int32, ips ...string) *corev1.Endpoints {
	e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: service}}
	ss := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: portName, Port: p, Protocol: corev1.ProtocolTCP}}}
	for _, ip := range ips {
		ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: ip})
	}
	e.Subsets = []corev1.EndpointSubset{ss}
	tenancy.SetTenant(e, tenant)
	return e
}

// TestNetnsFakeTPEndToEnd is the whole path: two fake TPs with the same
// system service, real informers, the view, the bounded runner, and the
// iptables proxier in a network namespace; real connections to each VIP
// reach only that TP's backend, also after an update made through the API.
func TestNetnsFakeTPEndToEnd(t *testing.T) {
	requireNetns(t)
	e := newNetnsEnv(t)
	e.backend(t, "tp1", "198.18.0.11")
	e.backend(t, "tp2", "198.18.0.21")
	e.backend(t, "tp2", "198.18.0.22")

	c := faketp.StartT(t, faketp.Options{Partitions: 2})
	tps := c.TPs()
	seeds := [][]any{
		{svcObj("system", "kube-system", "kube-dns", "198.19.0.10", "dns", 53), endpoints("system", "kube-system", "kube-dns", "dns", 8080, "198.18.0.11")},
		{svcObj("system", "kube-system", "kube-dns", "198.19.1.10", "dns", 53), endpoints("system", "kube-system", "kube-dns", "dns", 8080, "198.18.0.21")},
	}
	var names []string
	var cfgs []*rest.Config
	for i, tp := range tps {
		if err := tp.Seed(seeds[i]...); err != nil {
			t.Fatal(err)
		}
		names = append(names, tp.Name())
		cfgs = append(cfgs, tp.RESTConfig())
	}
	set, err := partition.NewFromConfigs(names, cfgs, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := kubeproxy.NewView(kubeproxyk8s.PartitionsOf(set).IDs(), kubeproxy.Options{})
	src, err := kubeproxyk8s.NewSource(set, []kubeproxy.ServiceHandler{view}, []kubeproxy.EndpointsHandler{view}, kubeproxyk8s.SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := e.proxier(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		_ = in(e.client, func() error { return p.Cleanup(context.Background()) })
	})
	set.Start(ctx)
	go src.Run(ctx)
	sync := func(ctx context.Context, s *kubeproxy.Snapshot, c kubeproxy.Changes) error {
		return in(e.client, func() error { return p.Sync(ctx, s, c) })
	}
	go func() {
		kubeproxy.NewRunner(view, sync, kubeproxy.RunnerOptions{MinInterval: 10 * time.Millisecond, RetryInterval: 50 * time.Millisecond}).Run(ctx)
		close(done)
	}()

	waitAnswer := func(addr, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // a hang guard, not a time limit
		for {
			a, err := e.dial(addr)
			if err == nil && a == want {
				return
			}
			if err == nil && !strings.HasPrefix(a, strings.Fields(want)[0]+" ") {
				t.Fatalf("%s answered %q: another TP's backend", addr, a)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: waiting for %q, last %q %v", addr, want, a, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitAnswer("198.19.0.10:53", "tp1 198.18.0.11")
	waitAnswer("198.19.1.10:53", "tp2 198.18.0.21")
	for addr, want := range map[string]string{"198.19.0.10:53": "tp1 198.18.0.11", "198.19.1.10:53": "tp2 198.18.0.21"} {
		for a, n := range e.answers(t, addr, 8) {
			if a != want {
				t.Fatalf("%s answered %q %d times, want only %q", addr, a, n, want)
			}
		}
	}

	// Move TP2's endpoint through TP2's API: only TP2's service is rewritten.
	ep, err := partitiontest.Clientset(t, set.Partitions()[1]).CoreV1().Endpoints("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep.Subsets[0].Addresses[0].IP = "198.18.0.22"
	if _, err := partitiontest.Clientset(t, set.Partitions()[1]).CoreV1().Endpoints("kube-system").Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAnswer("198.19.1.10:53", "tp2 198.18.0.22")
	if res := p.LastResult(); res.Full || res.Services != 1 {
		t.Fatalf("the update was synced as %+v, want one service, partial", res)
	}
	if got := e.answers(t, "198.19.0.10:53", 4); got["tp1 198.18.0.11"] != 4 {
		t.Fatalf("TP1's VIP after TP2's update: %v", got)
	}
}

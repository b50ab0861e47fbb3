// Command tps starts the fake tenant partitions of make bench-dns in one
// process and fills them: per TP, --services services (half ClusterIP, half
// headless with core/v1 Endpoints of two ready addresses, as Arktos serves
// them) and --pods pods,
// split between the system tenant (a fifth) and one regular tenant per TP.
// With --endpoint-addresses K every service has core/v1 Endpoints of K pod
// addresses instead, as an endpoints controller writes them for services
// with selectors: fake-tp --generate's shape (--pods 10 times --services,
// K 10), with make bench-dns's names.
// It writes TP kubeconfigs and a dnsperf query file mixing tenant names,
// legacy names, misses and SRV, prints READY, and serves until SIGTERM.
// On SIGUSR1 it collects its garbage and prints COLLECTED: a load run
// signals it before measuring, so that the TPs' own collection (1.8 GB
// live at 1.5M objects, a second or two of both cores) does not fall in the
// window it measures, as it would not on the TPs' own machines.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/ops"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

const namespaces = 20

func main() {
	dir := flag.String("dir", ".", "Directory for tpN.kubeconfig and queries.txt.")
	tpsN := flag.Int("partitions", 3, "Tenant partitions.")
	services := flag.Int("services", 10000, "Services per TP.")
	pods := flag.Int("pods", 10000, "Pods per TP.")
	queries := flag.Int("queries", 100000, "Lines in queries.txt.")
	addrs := flag.Int("endpoint-addresses", 0, "Give every service core/v1 Endpoints of this many pod addresses; 0: only the headless half, with two.")
	flag.Parse()
	ctx, cancel := ops.SignalContext(context.Background())
	defer cancel()
	c, err := faketp.Start(ctx, faketp.Options{Partitions: *tpsN, KubeconfigDir: *dir, Plugins: []faketp.Plugin{}})
	if err != nil {
		fail(err)
	}
	defer c.Stop()
	for i, tp := range c.TPs() {
		if err := seed(tp, i, *services, *pods, *addrs); err != nil {
			fail(err)
		}
	}
	if err := writeQueries(filepath.Join(*dir, "queries.txt"), *tpsN, *services, *queries); err != nil {
		fail(err)
	}
	fmt.Println("READY")
	collect := make(chan os.Signal, 1)
	signal.Notify(collect, syscall.SIGUSR1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-collect:
			runtime.GC()
			fmt.Println("COLLECTED")
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tps:", err)
	os.Exit(1)
}

func tenantOf(tp, i int) string {
	if i%5 == 0 {
		return "system"
	}
	return fmt.Sprintf("tenant%d", tp)
}

func ip(a, b, i int) string { return fmt.Sprintf("10.%d.%d.%d", a+b, (i>>8)&255, i&255) }

// podIP is TP t's pod i's address, distinct up to 327,680 pods a TP: past
// 65,536 the second octet moves on by 10 per 65,536 pods (10 TPs at most).
func podIP(t, i int) string { return ip(200+10*(i>>16), t, i) }

// endpoints is the core/v1 Endpoints of service i: addrs pod addresses,
// from pod i*addrs on.
func endpoints(t, i, addrs, pods int, ns, tenant string, port corev1.ServicePort) *corev1.Endpoints {
	ips := make([]corev1.EndpointAddress, addrs)
	for k := range ips {
		ips[k].IP = podIP(t, (i*addrs+k)%pods)
	}
	e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc%d", i), Namespace: ns},
		Subsets: []corev1.EndpointSubset{{
			Addresses: ips,
			Ports:     []corev1.EndpointPort{{Name: port.Name, Port: port.Port, Protocol: port.Protocol}},
		}}}
	tenancy.SetTenant(e, tenant)
	return e
}

// seed fills TP t; addrs > 0 gives every service Endpoints of that many
// addresses (see the package doc).
func seed(tp *faketp.TP, t, services, pods, addrs int) error {
	var objs []any
	flush := func() error {
		err := tp.Seed(objs...)
		objs = objs[:0]
		return err
	}
	tenant := map[string]any{"apiVersion": "v1", "kind": "Tenant", "metadata": map[string]any{"name": fmt.Sprintf("tenant%d", t)},
		"spec": map[string]any{"storageClusterId": "0"}}
	objs = append(objs, tenant)
	for _, tenant := range []string{"system", fmt.Sprintf("tenant%d", t)} {
		for n := 0; n < namespaces; n++ {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns%d", n)}}
			tenancy.SetTenant(ns, tenant)
			objs = append(objs, ns)
		}
	}
	for i := 0; i < pods; i++ {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod%d", i), Namespace: fmt.Sprintf("ns%d", i%namespaces)},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: podIP(t, i), PodIPs: []corev1.PodIP{{IP: podIP(t, i)}}}}
		tenancy.SetTenant(p, tenantOf(t, i))
		objs = append(objs, p)
		if len(objs) >= 2000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	port := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}
	for i := 0; i < services; i++ {
		ns := fmt.Sprintf("ns%d", i%namespaces)
		tenant := tenantOf(t, i)
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc%d", i), Namespace: ns}, Spec: corev1.ServiceSpec{Ports: port}}
		if i%2 == 0 {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = ip(100, t, i), []string{ip(100, t, i)}
		} else {
			// Headless and selector-less, with its Endpoints written
			// here: core/v1 Endpoints, as Arktos serves them.
			s.Spec.ClusterIP = corev1.ClusterIPNone
		}
		switch {
		case addrs > 0:
			objs = append(objs, endpoints(t, i, addrs, pods, ns, tenant, port[0]))
		case i%2 == 1:
			e := endpoints(t, i, 2, pods, ns, tenant, port[0])
			e.Subsets[0].Addresses[0].IP, e.Subsets[0].Addresses[1].IP = podIP(t, i%pods), podIP(t, (i+1)%pods)
			objs = append(objs, e)
		}
		tenancy.SetTenant(s, tenant)
		objs = append(objs, s)
		if len(objs) >= 2000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// writeQueries mixes 45% tenant-form A, 20% legacy (system) A, 15% misses,
// 10% SRV and 10% headless A.
func writeQueries(path string, tps, services, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewSource(1))
	for q := 0; q < n; q++ {
		t := r.Intn(tps)
		i := r.Intn(services)
		ns := fmt.Sprintf("ns%d", i%namespaces)
		for i%5 == 0 { // a regular tenant's service
			i = r.Intn(services)
			ns = fmt.Sprintf("ns%d", i%namespaces)
		}
		sys := r.Intn(services/5) * 5
		sysNS := fmt.Sprintf("ns%d", sys%namespaces)
		switch x := r.Intn(100); {
		case x < 45:
			i &^= 1
			if i%5 == 0 {
				i += 2
			}
			ns = fmt.Sprintf("ns%d", i%namespaces)
			fmt.Fprintf(w, "svc%d.%s.tenant%d.svc.cluster.local A\n", i, ns, t)
		case x < 65:
			fmt.Fprintf(w, "svc%d.%s.svc.cluster.local A\n", sys, sysNS)
		case x < 80:
			fmt.Fprintf(w, "missing%d.%s.tenant%d.svc.cluster.local A\n", i, ns, t)
		case x < 90:
			fmt.Fprintf(w, "_http._tcp.svc%d.%s.tenant%d.svc.cluster.local SRV\n", i, ns, t)
		default:
			i |= 1
			if i%5 == 0 {
				i += 2
			}
			ns = fmt.Sprintf("ns%d", i%namespaces)
			fmt.Fprintf(w, "svc%d.%s.tenant%d.svc.cluster.local A\n", i, ns, t)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

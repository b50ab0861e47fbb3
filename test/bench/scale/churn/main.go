// Command churn changes the fake TPs of make bench-scale at a steady rate
// and measures programming latency: the time from a change's write being
// acknowledged by its TP to partition-dns answering the changed name. Each
// change creates a ClusterIP service in one TP's regular tenant (tenantN of
// tpN+1, as test/bench/dns/tps seeds them); a poller in this process then
// asks partition-dns for its name every millisecond until it answers.
// It prints the count, p50, p99 and max, and exits 1 when a change never
// shows.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
)

func main() {
	kubeconfigs := flag.String("kubeconfigs", "", "Comma-separated TP kubeconfigs, in partition-dns's order.")
	server := flag.String("dns", "127.0.0.1:53", "partition-dns's address.")
	rate := flag.Int("rate", 500, "Changes per second.")
	duration := flag.Duration("duration", 20*time.Second, "How long to change.")
	timeout := flag.Duration("timeout", 10*time.Second, "How long a change may take to show before it counts as lost.")
	prefix := flag.String("name-prefix", "churn", "Services are named <prefix>-<k>; another prefix runs again against the same TPs.")
	flag.Parse()
	var clients []kubernetes.Interface
	for _, kc := range strings.Split(*kubeconfigs, ",") {
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			fail(err)
		}
		cfg.QPS, cfg.Burst = float32(*rate)*2, *rate*2
		c, err := kubernetes.NewForConfig(tenancyk8s.WrapConfig(cfg))
		if err != nil {
			fail(err)
		}
		clients = append(clients, c)
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		lost      int
		wg        sync.WaitGroup
	)
	tick := time.NewTicker(time.Second / time.Duration(*rate))
	defer tick.Stop()
	end := time.Now().Add(*duration)
	for k := 0; time.Now().Before(end); k++ {
		<-tick.C
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			d, err := change(clients, *prefix, k, *server, *timeout)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				lost++
				fmt.Fprintln(os.Stderr, "churn:", err)
				return
			}
			latencies = append(latencies, d)
		}(k)
	}
	wg.Wait()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(float64(len(latencies)-1)*p)]
	}
	fmt.Printf("changes %d lost %d p50_ms %.1f p99_ms %.1f max_ms %.1f\n", len(latencies), lost,
		ms(pct(0.5)), ms(pct(0.99)), ms(pct(1)))
	if lost > 0 {
		os.Exit(1)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "churn:", err)
	os.Exit(1)
}

// change creates service <prefix>-k in tenant<tp> of TP tp (k spread over the
// TPs) and returns how long after the write partition-dns answered its name.
func change(clients []kubernetes.Interface, prefix string, k int, server string, timeout time.Duration) (time.Duration, error) {
	tp := k % len(clients)
	tenant, ns, name := fmt.Sprintf("tenant%d", tp), "ns0", fmt.Sprintf("%s-%d", prefix, k)
	ctx, cancel := context.WithTimeout(tenancyk8s.WithTenant(context.Background(), tenant), timeout)
	defer cancel()
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	if _, err := clients[tp].CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("creating %s/%s/%s: %w", tenant, ns, name, err)
	}
	written := time.Now()
	q := new(dns.Msg)
	q.SetQuestion(fmt.Sprintf("%s.%s.%s.svc.cluster.local.", name, ns, tenant), dns.TypeA)
	conn, err := net.Dial("udp", server)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	c := &dns.Conn{Conn: conn}
	for {
		_ = conn.SetDeadline(time.Now().Add(100 * time.Millisecond))
		if err := c.WriteMsg(q); err == nil {
			if r, err := c.ReadMsg(); err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
				return time.Since(written), nil
			}
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%s never answered within %v", q.Question[0].Name, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

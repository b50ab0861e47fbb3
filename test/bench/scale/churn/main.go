// Command churn changes the fake TPs of make bench-scale and make soak at a
// steady rate and measures programming latency: the time from a change's
// write being acknowledged by its TP to partition-dns answering the changed
// name. A change creates a ClusterIP service in one TP's regular tenant
// (tenantN of tpN+1, as test/bench/dns/tps seeds them), and a poller in
// this process then asks partition-dns for its name until it answers
// (every millisecond at first, see await). With --keep N the object count
// stays flat, for a soak: once N of this run's services exist, changes
// alternate between deleting the oldest (measured until its name is
// NXDOMAIN) and creating one.
// It runs for --duration, or until SIGTERM or SIGINT when that is 0, then
// waits for the changes in flight; it prints the count, p50, p99 and max,
// then how many services it created and deleted, and exits 1 when a change
// never shows.
package main

import (
	"bufio"
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
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tpkit-dev/tpkit/pkg/ops"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
)

func main() {
	kubeconfigs := flag.String("kubeconfigs", "", "Comma-separated TP kubeconfigs, in partition-dns's order.")
	server := flag.String("dns", "127.0.0.1:53", "partition-dns's address.")
	rate := flag.Int("rate", 500, "Changes per second.")
	duration := flag.Duration("duration", 20*time.Second, "How long to change; 0: until SIGTERM or SIGINT.")
	timeout := flag.Duration("timeout", 10*time.Second, "How long a change may take to show before it counts as lost.")
	prefix := flag.String("name-prefix", "churn", "Services are named <prefix>-<k>; another prefix runs again against the same TPs.")
	keep := flag.Int("keep", 0, "With N > 0, keep the object count flat: once N of this run's services exist, changes alternate between deleting the oldest and creating one. 0: every change creates.")
	deletedFile := flag.String("deleted", "", "With --keep, write the name of every service deleted here, one per line (for make soak's final check).")
	traceFile := flag.String("trace", "", "Write here, for each change as it shows, the seconds from the start of the run to its write and its latency in ms: where in a run the slow ones fall (the collector's cycles, say).")
	flag.Parse()
	ctx, cancel := ops.SignalContext(context.Background())
	defer cancel()
	var clients []*partitiontest.Clients
	for _, kc := range strings.Split(*kubeconfigs, ",") {
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			fail(err)
		}
		cfg.QPS, cfg.Burst = float32(*rate)*2, *rate*2
		c, err := partitiontest.NewClients(tenancyk8s.WrapConfig(cfg), nil)
		if err != nil {
			fail(err)
		}
		clients = append(clients, c)
	}
	deletedNames, closeDeleted := output(*deletedFile)
	defer closeDeleted()
	trace, closeTrace := output(*traceFile)
	defer closeTrace()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		lost      int
		wg        sync.WaitGroup
	)
	start := time.Now()
	record := func(d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			lost++
			fmt.Fprintln(os.Stderr, "churn:", err)
			return
		}
		latencies = append(latencies, d)
		if trace != nil {
			fmt.Fprintf(trace, "%.3f %.1f\n", (time.Since(start) - d).Seconds(), ms(d))
		}
	}
	tick := time.NewTicker(time.Second / time.Duration(*rate))
	defer tick.Stop()
	var end <-chan time.Time
	if *duration > 0 {
		end = time.After(*duration)
	}
	// created and deleted count this run's services; shown[k] is closed
	// once service k's creation has shown (or failed), so that its
	// deletion follows it.
	created, deleted := 0, 0
	shown := map[int]chan struct{}{}
	change := func() {
		wg.Add(1)
		if *keep > 0 && created-deleted >= *keep {
			k, after := deleted, shown[deleted]
			delete(shown, deleted)
			deleted++
			go func() {
				defer wg.Done()
				<-after
				qname, d, err := remove(clients, *prefix, k, *server, *timeout)
				if err == nil && deletedNames != nil {
					mu.Lock()
					fmt.Fprintln(deletedNames, qname)
					mu.Unlock()
				}
				record(d, err)
			}()
			return
		}
		k, done := created, make(chan struct{})
		if *keep > 0 {
			shown[k] = done
		}
		created++
		go func() {
			defer wg.Done()
			defer close(done)
			record(create(clients, *prefix, k, *server, *timeout))
		}()
	}
	// Changes follow the clock, not the ticks: a ticker drops the ticks
	// a busy machine delays, and those changes are made at the next one.
	for issued, running := 0, true; running; {
		select {
		case <-tick.C:
		case <-end:
			running = false
			continue
		case <-ctx.Done():
			running = false
			continue
		}
		for due := int(time.Since(start).Seconds() * float64(*rate)); issued < due; issued++ {
			change()
		}
	}
	wg.Wait()
	if trace != nil {
		if err := trace.Flush(); err != nil {
			fail(err)
		}
	}
	if deletedNames != nil {
		if err := deletedNames.Flush(); err != nil {
			fail(err)
		}
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(float64(len(latencies)-1)*p)]
	}
	fmt.Printf("changes %d lost %d p50_ms %.1f p99_ms %.1f max_ms %.1f\n", len(latencies), lost,
		ms(pct(0.5)), ms(pct(0.99)), ms(pct(1)))
	fmt.Printf("created %d deleted %d\n", created, deleted)
	if lost > 0 {
		os.Exit(1)
	}
}

// output creates a buffered file at path, nil for an empty path, and
// returns it with what closes it.
func output(path string) (*bufio.Writer, func()) {
	if path == "" {
		return nil, func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fail(err)
	}
	return bufio.NewWriter(f), func() { f.Close() }
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "churn:", err)
	os.Exit(1)
}

// target is where service <prefix>-k lives: tenant<tp>/ns0 of TP tp, k
// spread over the TPs; qname is its tenant-form name.
func target(n int, prefix string, k int) (tp int, tenant, ns, name, qname string) {
	tp = k % n
	tenant, ns, name = fmt.Sprintf("tenant%d", tp), "ns0", fmt.Sprintf("%s-%d", prefix, k)
	return tp, tenant, ns, name, fmt.Sprintf("%s.%s.%s.svc.cluster.local.", name, ns, tenant)
}

// create creates service <prefix>-k and returns how long after the write
// partition-dns answered its name.
func create(clients []*partitiontest.Clients, prefix string, k int, server string, timeout time.Duration) (time.Duration, error) {
	tp, tenant, ns, name, qname := target(len(clients), prefix, k)
	ctx, cancel := context.WithTimeout(tenancyk8s.WithTenant(context.Background(), tenant), timeout)
	defer cancel()
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	if _, err := clients[tp].CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("creating %s/%s/%s: %w", tenant, ns, name, err)
	}
	return await(ctx, server, qname, timeout, func(r *dns.Msg) bool { return r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 })
}

// remove deletes service <prefix>-k and returns its name and how long after
// the write partition-dns answered it NXDOMAIN.
func remove(clients []*partitiontest.Clients, prefix string, k int, server string, timeout time.Duration) (string, time.Duration, error) {
	tp, tenant, ns, name, qname := target(len(clients), prefix, k)
	ctx, cancel := context.WithTimeout(tenancyk8s.WithTenant(context.Background(), tenant), timeout)
	defer cancel()
	if err := clients[tp].CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return qname, 0, fmt.Errorf("deleting %s/%s/%s: %w", tenant, ns, name, err)
	}
	d, err := await(ctx, server, qname, timeout, func(r *dns.Msg) bool { return r.Rcode == dns.RcodeNameError })
	return qname, d, err
}

// await asks server for qname's A record until an answer satisfies ok,
// and returns the time that took. It asks every millisecond at first, then
// every tenth of the time waited so far, at most every 50 ms: a change that
// shows late is measured within 10 % (or 50 ms), and its polls stay a few
// dozen. Polling every millisecond, a server that fell behind on a busy
// machine got a query a millisecond for each change it was late with, fell
// further behind, and dropped thousands of them a second (the second
// 30-minute make soak, under make test's load).
func await(ctx context.Context, server, qname string, timeout time.Duration, ok func(*dns.Msg) bool) (time.Duration, error) {
	written := time.Now()
	q := new(dns.Msg)
	q.SetQuestion(qname, dns.TypeA)
	conn, err := net.Dial("udp", server)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	c := &dns.Conn{Conn: conn}
	for {
		_ = conn.SetDeadline(time.Now().Add(100 * time.Millisecond))
		if err := c.WriteMsg(q); err == nil {
			if r, err := c.ReadMsg(); err == nil && ok(r) {
				return time.Since(written), nil
			}
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%s did not change within %v", qname, timeout)
		}
		time.Sleep(max(time.Millisecond, min(time.Since(written)/10, 50*time.Millisecond)))
	}
}

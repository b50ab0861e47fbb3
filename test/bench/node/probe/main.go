// Command probe is the measuring side of make bench-node (run.sh): it runs
// inside the network namespace of the kube-proxy under test and has three
// jobs, one per first argument.
//
//	probe expect --kubeconfigs A,B,C
//
// prints what complete rules hold for the TPs as they are now: the service
// ports that get a cluster IP (services with one, not headless, not
// ExternalName) and the ready endpoint addresses × ports of those services,
// over every tenant of every TP: "services S endpoints E".
//
//	probe endpoint --kubeconfig K --namespace N --service SVC --pod P --ip IP
//
// adds one endpoint to a service the way a node does: it creates pod P
// with the service's selector label on a node, then PATCHes its status to
// Running and Ready with pod IP IP, and checks that the TP's endpoints
// controller put IP in the service's Endpoints. It prints the Unix time at
// which the status write was acknowledged.
//
//	probe wait --pid PID --metrics URL --services S --endpoints E [--ip IP] --since T --timeout D [--mode iptables|ipvs]
//
// waits until kube-proxy's rules in this namespace are complete: with
// --mode iptables (iptables-save -t nat, from PATH, so the backend is the
// caller's choice), S service ports jumped to from KUBE-SERVICES (-j
// KUBE-SVC-...) and E endpoint DNAT rules (-A KUBE-SEP-... -j DNAT), and
// with --ip a DNAT to IP as well; with --mode ipvs (ipvsadm -Ln), S virtual
// services and E real servers. It dumps the rules only after a sync ended
// (kubeproxy_sync_proxy_rules_last_timestamp_seconds on --metrics changed),
// with kube-proxy (PID) and its children stopped meanwhile, so that the
// dump is that sync's rules; it prints the end of the first sync whose
// rules are complete minus --since, less the time kube-proxy was stopped
// before it, in seconds, and the counts. After --timeout it prints
// "timeout" with the counts last seen, and exits 3.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: probe expect|endpoint|wait [flags]"))
	}
	fs := flag.NewFlagSet("probe "+os.Args[1], flag.ExitOnError)
	var err error
	switch os.Args[1] {
	case "expect":
		kubeconfigs := fs.String("kubeconfigs", "", "Comma-separated TP kubeconfigs.")
		_ = fs.Parse(os.Args[2:])
		err = expect(*kubeconfigs)
	case "endpoint":
		kubeconfig := fs.String("kubeconfig", "", "The TP's kubeconfig.")
		ns := fs.String("namespace", "gen-0", "Namespace of the service (system tenant).")
		svc := fs.String("service", "svc-0", "The service whose selector (app=NAME) the pod gets.")
		pod := fs.String("pod", "bench-node-pod", "Name of the new pod.")
		ip := fs.String("ip", "", "The pod's IP, the new endpoint.")
		_ = fs.Parse(os.Args[2:])
		err = endpoint(*kubeconfig, *ns, *svc, *pod, *ip)
	case "wait":
		var w waiter
		fs.StringVar(&w.metrics, "metrics", "", "kube-proxy's /metrics URL.")
		fs.IntVar(&w.want.services, "services", 0, "Service ports complete rules hold.")
		fs.IntVar(&w.want.endpoints, "endpoints", 0, "Endpoints complete rules hold.")
		fs.StringVar(&w.ip, "ip", "", "An endpoint IP the rules must DNAT to.")
		fs.StringVar(&w.mode, "mode", "iptables", "iptables or ipvs: which dump to read.")
		fs.IntVar(&w.pid, "pid", 0, "kube-proxy's process ID: stopped (with its children) during each dump, and the time stopped left out of the figure.")
		since := fs.Float64("since", 0, "Unix time (s) the figure counts from.")
		fs.DurationVar(&w.timeout, "timeout", 5*time.Minute, "How long to wait.")
		_ = fs.Parse(os.Args[2:])
		w.since = *since
		err = w.run()
	default:
		err = fmt.Errorf("unknown job %q: want expect, endpoint or wait", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "probe:", err)
	var t timeoutError
	if errors.As(err, &t) {
		os.Exit(3)
	}
	os.Exit(1)
}

// clients are the typed clients of a TP's kubeconfig, on Arktos's tenant
// paths.
func clients(kubeconfig string) (*partitiontest.Clients, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 100
	cfg.Timeout = time.Minute
	return partitiontest.NewClients(tenancyk8s.WrapConfig(cfg), nil)
}

// counts are what a dump of kube-proxy's rules holds, or should.
type counts struct{ services, endpoints int }

func (c counts) String() string {
	return fmt.Sprintf("services %d endpoints %d", c.services, c.endpoints)
}

func expect(kubeconfigs string) error {
	var total counts
	for _, kc := range strings.Split(kubeconfigs, ",") {
		c, err := clients(kc)
		if err != nil {
			return err
		}
		ctx := context.Background()
		// Every tenant: the wrapped client maps NamespaceAll to /tenants/all/.
		svcs, err := c.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("%s: %v", kc, err)
		}
		eps, err := c.CoreV1().Endpoints(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("%s: %v", kc, err)
		}
		n := expected(svcs.Items, eps.Items)
		total.services += n.services
		total.endpoints += n.endpoints
	}
	fmt.Println(total)
	return nil
}

// expected counts the service ports kube-proxy gives rules (a cluster IP,
// not ExternalName) and the ready endpoint addresses of those ports.
func expected(svcs []corev1.Service, eps []corev1.Endpoints) counts {
	var n counts
	proxied := map[string]bool{}
	for i := range svcs {
		s := &svcs[i]
		if s.Spec.Type == corev1.ServiceTypeExternalName || s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone {
			continue
		}
		n.services += len(s.Spec.Ports)
		proxied[key(s.ObjectMeta)] = true
	}
	for i := range eps {
		if !proxied[key(eps[i].ObjectMeta)] {
			continue
		}
		for _, ss := range eps[i].Subsets {
			n.endpoints += len(ss.Addresses) * len(ss.Ports)
		}
	}
	return n
}

func key(m metav1.ObjectMeta) string {
	return tenancy.TenantOf(&m) + "/" + m.Namespace + "/" + m.Name
}

func endpoint(kubeconfig, ns, svc, name, ip string) error {
	if ip == "" {
		return errors.New("--ip is required")
	}
	c, err := clients(kubeconfig)
	if err != nil {
		return err
	}
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": svc}},
		Spec: corev1.PodSpec{NodeName: "bench-node",
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	status, _ := json.Marshal(map[string]any{"status": corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}}})
	if _, err := c.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	acked := time.Now()
	ep, err := c.CoreV1().Endpoints(ns).Get(ctx, svc, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, ss := range ep.Subsets {
		for _, a := range ss.Addresses {
			if a.IP == ip {
				fmt.Printf("%.3f\n", float64(acked.UnixNano())/1e9)
				return nil
			}
		}
	}
	return fmt.Errorf("the endpoints controller did not add %s to %s/%s's Endpoints", ip, ns, svc)
}

// timeoutError is the wait's end without complete rules.
type timeoutError struct{ last string }

func (t timeoutError) Error() string { return "timeout: " + t.last }

// waiter is the wait job's settings.
type waiter struct {
	metrics, ip, mode string
	pid               int
	want              counts
	since             float64
	timeout           time.Duration
}

func (w *waiter) run() error {
	deadline := time.Now().Add(w.timeout)
	last, seen := 0.0, "no sync yet"
	var pauses [][2]float64 // when kube-proxy was stopped for a dump, Unix seconds
	hc := &http.Client{Timeout: 5 * time.Second}
	for time.Now().Before(deadline) {
		ts, err := lastSync(hc, w.metrics)
		if err != nil || ts == 0 || ts == last {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		stopped, err := stop(w.pid)
		if err != nil {
			return err
		}
		f0 := unix(time.Now())
		got, hasIP, err := w.dump(deadline)
		f1 := unix(time.Now())
		resume(stopped)
		pauses = append(pauses, [2]float64{f0, f1})
		var t timeoutError
		if errors.As(err, &t) {
			break
		}
		if err != nil {
			return err
		}
		seen = fmt.Sprintf("%s (want %s)", got, w.want)
		if w.ip != "" {
			seen += fmt.Sprintf(", %s %v", w.ip, hasIP)
		}
		after, err := lastSync(hc, w.metrics)
		if err != nil {
			return err
		}
		// The trail of dumps, for the run's log.
		fmt.Fprintf(os.Stderr, "probe: sync ended %.1f s, dumped %.1f s later in %.1f s: %s; latest sync %.1f s\n",
			ts-w.since, f0-ts, f1-f0, seen, after-w.since)
		if after != ts {
			// A sync ended between the metric's read and the stop: the
			// dump may be its rules. Dump again.
			continue
		}
		last = ts
		if got.services >= w.want.services && got.endpoints >= w.want.endpoints && (w.ip == "" || hasIP) {
			fmt.Printf("%.3f %s\n", ts-w.since-pausedBefore(pauses, ts), got)
			return nil
		}
	}
	fmt.Println("timeout", seen)
	return timeoutError{seen}
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// pausedBefore is how long kube-proxy was stopped before ts: a figure
// counts kube-proxy's own time, not the probe's dumps.
func pausedBefore(pauses [][2]float64, ts float64) float64 {
	d := 0.0
	for _, p := range pauses {
		if p[1] <= ts {
			d += p[1] - p[0]
		}
	}
	return d
}

// stop sends SIGSTOP to pid and its descendants (kube-proxy and the
// iptables-restore it may be running), so that no sync ends during a dump
// and the dump is the rules of the last sync that ended before it. It
// returns the stopped processes; 0 stops nothing.
func stop(pid int) ([]int, error) {
	if pid == 0 {
		return nil, nil
	}
	var stopped []int
	seen := map[int]bool{}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		// Stopped first, then asked for its children: it forks no more.
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			if p == pid {
				resume(stopped)
				return nil, fmt.Errorf("stopping kube-proxy (%d): %v", pid, err)
			}
			continue // a child that ended
		}
		stopped = append(stopped, p)
		queue = append(queue, children(p)...)
	}
	return stopped, nil
}

// resume sends SIGCONT to the stopped processes.
func resume(pids []int) {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGCONT)
	}
}

// children are the child processes of pid's threads.
func children(pid int) []int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var out []int
	for _, t := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// dump reads the rules and counts them.
func (w *waiter) dump(deadline time.Time) (counts, bool, error) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var cmd *exec.Cmd
	count := countIPTables
	if w.mode == "ipvs" {
		cmd = exec.CommandContext(ctx, "ipvsadm", "-Ln")
		count = countIPVS
	} else {
		cmd = exec.CommandContext(ctx, "iptables-save", "-t", "nat")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return counts{}, false, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return counts{}, false, err
	}
	c, hasIP := count(out, w.ip)
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return c, hasIP, timeoutError{"in " + cmd.Path}
		}
		return c, hasIP, fmt.Errorf("%s: %v", cmd.Path, err)
	}
	return c, hasIP, nil
}

// countIPTables counts iptables-save's service jumps and endpoint DNATs,
// and says whether one DNATs to ip.
func countIPTables(r io.Reader, ip string) (counts, bool) {
	var c counts
	hasIP := false
	to := "--to-destination " + ip + ":"
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		l := s.Text()
		switch {
		case strings.HasPrefix(l, "-A KUBE-SERVICES ") && strings.Contains(l, " -j KUBE-SVC-"):
			c.services++
		case strings.HasPrefix(l, "-A KUBE-SEP-") && strings.Contains(l, " -j DNAT"):
			c.endpoints++
			if ip != "" && strings.Contains(l, to) {
				hasIP = true
			}
		}
	}
	return c, hasIP
}

// countIPVS counts ipvsadm -Ln's virtual services and real servers, and
// says whether ip is one of the real servers.
func countIPVS(r io.Reader, ip string) (counts, bool) {
	var c counts
	hasIP := false
	s := bufio.NewScanner(r)
	for s.Scan() {
		f := strings.Fields(s.Text())
		switch {
		case len(f) >= 2 && (f[0] == "TCP" || f[0] == "UDP" || f[0] == "SCTP"):
			c.services++
		case len(f) >= 2 && f[0] == "->" && f[1] != "RemoteAddress:Port":
			c.endpoints++
			if ip != "" && strings.HasPrefix(f[1], ip+":") {
				hasIP = true
			}
		}
	}
	return c, hasIP
}

// lastSync is kubeproxy_sync_proxy_rules_last_timestamp_seconds, 0 before
// the first sync.
func lastSync(hc *http.Client, url string) (float64, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "kubeproxy_sync_proxy_rules_last_timestamp_seconds "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, s.Err()
}

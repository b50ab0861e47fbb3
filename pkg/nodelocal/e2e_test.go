package nodelocal

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"net/netip"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/nodelocal/rules"
	"github.com/tpkit-dev/tpkit/testbed/netns"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// The node of the end-to-end test, all inside one network namespace:
//
//	169.254.20.10, 10.0.0.10   the cache's local IPs (10.0.0.10 is the kube-dns service IP)
//	10.0.0.50                  the node-local-upstream service IP (DNAT only)
//	10.96.0.100                a kube-dns endpoint: answers 10.1.1.1
//	10.96.0.200                the endpoint behind node-local-upstream: answers 10.2.2.2
//
// kube-proxy's rules are stood in for by nat DNAT rules from each service IP
// to its endpoint. An answer of 10.2.2.2 from 10.0.0.10 therefore came
// through the cache; 10.1.1.1 came from the kube-dns endpoint.
const (
	linkLocal     = "169.254.20.10"
	kubeDNS       = "10.0.0.10"
	upstreamSvc   = "10.0.0.50"
	endpointIP    = "10.96.0.100"
	upstreamEP    = "10.96.0.200"
	viaCache      = "10.2.2.2"
	viaEndpoint   = "10.1.1.1"
	probeQuestion = "kubernetes.default.svc.cluster.local."
)

type child struct {
	t    *testing.T
	role string
	cmd  *exec.Cmd
	log  string
	done chan error
}

func startChild(t *testing.T, ns *netns.NS, role string, args ...string) *child {
	t.Helper()
	c := &child{t: t, role: role, done: make(chan error, 1)}
	c.log = filepath.Join(t.TempDir(), role+".log")
	f, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	self := testbin.Command(append([]string{role}, args...)...)
	c.cmd = ns.Command(self.Path)
	c.cmd.Env = self.Env
	c.cmd.Stdout, c.cmd.Stderr = f, f
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait(); f.Close() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
		if t.Failed() {
			b, _ := os.ReadFile(c.log)
			t.Logf("%s log:\n%s", role, tail(string(b), 40))
		}
	})
	return c
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stop sends sig and waits for the exit.
func (c *child) stop(sig syscall.Signal) error {
	if err := c.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case err := <-c.done:
		c.done <- err
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not exit after %v", c.role, sig)
	}
}

// dnsServer answers every A question with ip, in the namespace.
func dnsServer(t *testing.T, ns *netns.NS, addr, ip string) {
	t.Helper()
	var pc net.PacketConn
	var ln net.Listener
	if err := ns.Do(func() (err error) {
		if pc, err = net.ListenPacket("udp", addr); err != nil {
			return err
		}
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		if q.Qclass != dns.ClassINET {
			m.Rcode = dns.RcodeRefused // like CoreDNS without the chaos plugin
		} else if q.Qtype == dns.TypeA {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.ParseIP(ip)}}
		}
		_ = w.WriteMsg(m)
	})
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		go func() { _ = s.ActivateAndServe() }()
		t.Cleanup(func() { _ = s.Shutdown() })
	}
}

// query asks server from inside the namespace and returns the A value, or
// "" and the error.
func query(ns *netns.NS, server, name string, timeout time.Duration) (string, error) {
	var ans string
	err := ns.Do(func() error {
		c := &dns.Client{Net: "udp", Timeout: timeout}
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		r, _, err := c.Exchange(m, server)
		if err != nil {
			return err
		}
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				ans = a.A.String()
			}
		}
		if ans == "" {
			return fmt.Errorf("no A record, rcode %s", dns.RcodeToString[r.Rcode])
		}
		return nil
	})
	return ans, err
}

// httpGet fetches a URL path from addr inside the namespace.
func httpGet(ns *netns.NS, addr, path string) (string, error) {
	var body string
	err := ns.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr)
		b, err := io.ReadAll(bufio.NewReader(c))
		body = string(b)
		return err
	})
	return body, err
}

// metric returns the value of the first sample line that starts with
// prefix in a /metrics body, or -1.
func metric(body, prefix string) float64 {
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix+" ") {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(l, prefix)), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// prober sends a query to the kube-dns IP every 10 ms and records who
// answered.
type prober struct {
	ns   *netns.NS
	mu   sync.Mutex
	obs  []observation
	stop chan struct{}
	done chan struct{}
}

type observation struct {
	at     time.Time
	answer string // viaCache, viaEndpoint, or "" for lost
}

func startProber(ns *netns.NS) *prober {
	p := &prober{ns: ns, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			ans, _ := query(ns, kubeDNS+":53", probeQuestion, 200*time.Millisecond)
			p.mu.Lock()
			p.obs = append(p.obs, observation{at: time.Now(), answer: ans})
			p.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return p
}

func (p *prober) halt() {
	close(p.stop)
	<-p.done
}

// since returns, for observations after t0, the time of the first answer
// equal to want after which every answer is want, and the number of queries
// lost (no answer) before it.
func (p *prober) since(t0 time.Time, want string) (time.Duration, int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var obs []observation
	for _, o := range p.obs {
		if !o.at.Before(t0) {
			obs = append(obs, o)
		}
	}
	first := -1
	for i := len(obs) - 1; i >= 0 && obs[i].answer == want; i-- {
		first = i
	}
	if first < 0 || len(obs)-first < 5 {
		return 0, 0, false
	}
	lost := 0
	for _, o := range obs[:first] {
		if o.answer == "" {
			lost++
		}
	}
	return obs[first].at.Sub(t0), lost, true
}

func backends() []string {
	var out []string
	for _, b := range []string{"iptables-nft", "iptables-legacy"} {
		if _, err := exec.LookPath(b); err == nil {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		out = []string{"iptables"}
	}
	return out
}

// TestNodeLocalHASwitch is the NodeLocal HA switch's acceptance test: the cache and the watcher
// run as real processes in a namespace that stands in for a node.
func TestNodeLocalHASwitch(t *testing.T) {
	if why := netns.Available(); why != "" {
		t.Skipf("skipping: %s", why)
	}
	for _, bin := range backends() {
		t.Run(bin, func(t *testing.T) {
			// Each backend has its own network namespace, and the run is
			// mostly waiting on timers in processes: the two overlap.
			t.Parallel()
			testHASwitch(t, bin)
		})
	}
}

func testHASwitch(t *testing.T, bin string) {
	if _, err := exec.LookPath(bin); err != nil {
		t.Skipf("skipping: %s not installed", bin)
	}
	ns := netns.New(t)
	for _, ip := range []string{endpointIP, upstreamEP} {
		ns.MustRun(t, "ip", "addr", "add", ip+"/32", "dev", "lo")
	}
	addDefaultRoute(t, ns)
	// kube-proxy's stand-in: DNAT the service IPs to their endpoints.
	for _, svc := range [][2]string{{kubeDNS, endpointIP}, {upstreamSvc, upstreamEP}} {
		for _, chain := range []string{"OUTPUT", "PREROUTING"} {
			for _, proto := range []string{"udp", "tcp"} {
				ns.MustRun(t, bin, "-w", "-t", "nat", "-A", chain, "-d", svc[0], "-p", proto, "--dport", "53",
					"-m", "comment", "--comment", "kube-proxy stand-in", "-j", "DNAT", "--to-destination", svc[1]+":53")
			}
		}
	}
	dnsServer(t, ns, endpointIP+":53", viaEndpoint)
	dnsServer(t, ns, upstreamEP+":53", viaCache)
	// Before any NodeLocal part runs, the service IP reaches the endpoint.
	testbin.Eventually(t, "the kube-dns endpoint behind the DNAT", func() bool {
		a, _ := query(ns, kubeDNS+":53", probeQuestion, time.Second)
		return a == viaEndpoint
	})

	localIPs := "--local-ip=" + linkLocal + "," + kubeDNS
	cacheArgs := []string{localIPs, "--upstream-svc-ip=" + upstreamSvc, "--setup-iptables=false",
		"--upstream-servers=" + upstreamEP, "--identity=cache-under-test", "--sync-interval=1s",
		"--metrics-listen-address=127.0.0.1:9253"}
	watchArgs := []string{localIPs, "--iptables=" + bin, "--sync-interval=200ms",
		"--metrics-listen-address=127.0.0.1:9254"}
	cacheProc := startChild(t, ns, "cache", cacheArgs...)
	watcher := startChild(t, ns, "watch", watchArgs...)

	set := rules.Build(rules.Config{LocalIPs: []netip.Addr{netip.MustParseAddr(linkLocal), netip.MustParseAddr(kubeDNS)}, DNSPort: 53, HealthPort: 8080})
	counts := func() map[string]int {
		out := ns.MustRun(t, bin+"-save")
		c := map[string]int{}
		for _, l := range strings.Split(out, "\n") {
			if lr, ok, err := rules.ParseListLine(l); err == nil && ok && strings.HasPrefix(lr.Comment, rules.CommentPrefix) {
				c[lr.Comment]++
			}
		}
		return c
	}
	exact := func(want []rules.Rule) error {
		c := counts()
		var problems []string
		for _, r := range want {
			if c[r.Comment] != 1 {
				problems = append(problems, fmt.Sprintf("%q x%d", r.Comment, c[r.Comment]))
			}
		}
		if len(c) != len(want) {
			var names []string
			for k := range c {
				names = append(names, k)
			}
			sort.Strings(names)
			problems = append(problems, fmt.Sprintf("%d distinct owned rules, want %d: %v", len(c), len(want), names))
		}
		if len(problems) > 0 {
			return fmt.Errorf("rule counts: %s", strings.Join(problems, "; "))
		}
		return nil
	}

	// 1. The cache answers queries to the kube-dns service IP.
	testbin.Eventually(t, "the cache to answer on the kube-dns IP", func() bool {
		a, _ := query(ns, kubeDNS+":53", probeQuestion, time.Second)
		return a == viaCache
	})
	// The flip adds the rules one by one; wait for the last.
	testbin.Eventually(t, "the whole rule set", func() bool { return exact(set) == nil })
	if _, err := exec.LookPath("dig"); err == nil {
		out := ns.MustRun(t, "dig", "+short", "+time=2", "+tries=1", "@"+kubeDNS, "web.default.svc.cluster.local", "A")
		if strings.TrimSpace(out) != viaCache {
			t.Errorf("dig @%s = %q, want %s (the cache)", kubeDNS, out, viaCache)
		}
	}
	// Repeated syncs (every 200 ms) change nothing.
	m0, err := httpGet(ns, "127.0.0.1:9254", "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := exact(set); err != nil {
		t.Errorf("after 5 syncs: %v", err)
	}
	m1, _ := httpGet(ns, "127.0.0.1:9254", "/metrics")
	if a, b := metric(m0, `tpkit_nodelocal_rule_changes_total{op="added"}`), metric(m1, `tpkit_nodelocal_rule_changes_total{op="added"}`); a != b || a != float64(len(set)) {
		t.Errorf("rules added: %v then %v, want %d both times", a, b, len(set))
	}
	if v := metric(m1, "tpkit_nodelocal_switch_state"); v != 1 {
		t.Errorf("switch state %v, want 1", v)
	}
	for i := 0; i < 3; i++ {
		if a, err := query(ns, kubeDNS+":53", probeQuestion, time.Second); a != viaCache {
			t.Errorf("repeated query answered %q (%v)", a, err)
		}
	}
	cm, err := httpGet(ns, "127.0.0.1:9253", "/metrics")
	if err != nil || metric(cm, `tpkit_nodelocal_cache_hits_total{type="success"}`) < 3 {
		t.Errorf("cache metrics: hits %v, err %v", metric(cm, `tpkit_nodelocal_cache_hits_total{type="success"}`), err)
	}

	// 2. kill -9 of the cache: the watcher removes the switch rules and the
	// endpoint answers.
	p := startProber(ns)
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	if err := cacheProc.stop(syscall.SIGKILL); err == nil {
		t.Fatalf("cache exited cleanly after SIGKILL")
	}
	var failover time.Duration
	var lostFail int
	testbin.Eventually(t, "queries to fail over to the kube-dns endpoint", func() bool {
		var ok bool
		failover, lostFail, ok = p.since(t0, viaEndpoint)
		return ok
	})
	testbin.Eventually(t, "the switch rules to be removed", func() bool { return exact(rules.WithoutSwitch(set)) == nil })
	time.Sleep(600 * time.Millisecond) // a few syncs
	if err := exact(rules.WithoutSwitch(set)); err != nil {
		t.Errorf("after failover and syncs: %v", err)
	}
	m2, _ := httpGet(ns, "127.0.0.1:9254", "/metrics")
	if v := metric(m2, "tpkit_nodelocal_switch_state"); v != 0 {
		t.Errorf("switch state %v after failover, want 0", v)
	}
	if v := metric(m2, `tpkit_nodelocal_switch_flips_total{to="endpoints"}`); v != 1 {
		t.Errorf("flips to endpoints %v, want 1", v)
	}

	// 3. The cache restarts: the rules return and the cache answers.
	t1 := time.Now()
	cacheProc = startChild(t, ns, "cache", cacheArgs...)
	var failback time.Duration
	var lostBack int
	testbin.Eventually(t, "queries to return to the cache", func() bool {
		var ok bool
		failback, lostBack, ok = p.since(t1, viaCache)
		return ok
	})
	p.halt()
	testbin.Eventually(t, "the switch rules to return", func() bool { return exact(set) == nil })
	time.Sleep(600 * time.Millisecond) // a few more syncs
	if err := exact(set); err != nil {
		t.Errorf("after fail-back: %v", err)
	}
	m3, _ := httpGet(ns, "127.0.0.1:9254", "/metrics")
	if v := metric(m3, `tpkit_nodelocal_switch_flips_total{to="local"}`); v < 1 {
		t.Errorf("flips to local %v", v)
	}
	t.Logf("RESULT backend=%s failover=%v lost_during_failover=%d failback=%v lost_during_failback=%d probe_every=10ms",
		bin, failover.Round(time.Millisecond), lostFail, failback.Round(time.Millisecond), lostBack)

	// 4. A graceful stop (SIGTERM, as in a rolling update) drains: the cache
	// fails the watcher's probe while it still answers, so the traffic
	// moves to the endpoint before its sockets close.
	p = startProber(ns)
	time.Sleep(300 * time.Millisecond)
	t2 := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- cacheProc.stop(syscall.SIGTERM) }()
	var drainSwitch time.Duration
	testbin.Eventually(t, "a graceful stop to move the traffic to the endpoint", func() bool {
		var ok bool
		drainSwitch, _, ok = p.since(t2, viaEndpoint)
		return ok
	})
	if err := <-stopped; err != nil {
		t.Errorf("cache exit after SIGTERM: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	p.halt()
	_, lostAfter, _ := p.since(t2, viaEndpoint)
	t.Logf("RESULT backend=%s graceful_stop_switch=%v lost_during_graceful_stop=%d",
		bin, drainSwitch.Round(time.Millisecond), lostAfter)
	cacheProc = startChild(t, ns, "cache", cacheArgs...)
	testbin.Eventually(t, "the restarted cache to answer again", func() bool {
		a, _ := query(ns, kubeDNS+":53", probeQuestion, time.Second)
		return a == viaCache
	})
	testbin.Eventually(t, "the switch rules to return", func() bool { return exact(set) == nil })

	// 5. Teardown: the watcher removes every rule; the cache its addresses.
	if err := watcher.stop(syscall.SIGTERM); err != nil {
		t.Errorf("watcher exit: %v", err)
	}
	if c := counts(); len(c) != 0 {
		t.Errorf("rules left after the watcher's teardown: %v", c)
	}
	if err := cacheProc.stop(syscall.SIGTERM); err != nil {
		t.Errorf("cache exit: %v", err)
	}
	addrs := ns.MustRun(t, "ip", "-o", "addr")
	for _, ip := range []string{linkLocal, kubeDNS} {
		if strings.Contains(addrs, " "+ip+"/") {
			t.Errorf("%s left on an interface after the cache's teardown:\n%s", ip, addrs)
		}
	}
	// With the cache gone and no rules, the service IP still works: kube-proxy's path.
	if a, err := query(ns, kubeDNS+":53", probeQuestion, time.Second); a != viaEndpoint {
		t.Errorf("after teardown the service IP answered %q (%v), want the endpoint", a, err)
	}
}

// addDefaultRoute gives ns the default route a node has; without one,
// packets to a service IP fail the route lookup before kube-proxy's DNAT can
// apply. A veth pair with both ends in the namespace gives one that leads
// nowhere.
func addDefaultRoute(t *testing.T, ns *netns.NS) {
	t.Helper()
	ns.MustRun(t, "ip", "link", "add", "node0", "type", "veth", "peer", "name", "node1")
	ns.MustRun(t, "ip", "link", "set", "node0", "up")
	ns.MustRun(t, "ip", "link", "set", "node1", "up")
	ns.MustRun(t, "ip", "addr", "add", "192.168.255.1/30", "dev", "node0")
	ns.MustRun(t, "ip", "route", "add", "default", "via", "192.168.255.2", "dev", "node0")
}

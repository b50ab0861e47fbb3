package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// running is partition-dns run in the test's process by runProgram.
type running struct {
	done chan struct{} // closed when run returns
	err  error         // run's error, once done is closed
}

// runProgram parses args and runs partition-dns until the test ends, when
// it is stopped and an error from run fails the test.
func runProgram(t *testing.T, args []string) *running {
	t.Helper()
	c, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &running{done: make(chan struct{})}
	go func() { p.err = run(ctx, c); close(p.done) }()
	t.Cleanup(func() {
		cancel()
		<-p.done
		if p.err != nil {
			t.Errorf("run: %v", p.err)
		}
	})
	return p
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the flag the error names
	}{
		{[]string{"--pods", "maybe"}, "--pods"},
		{[]string{"--ttl", "4000"}, "--ttl"},
		{[]string{"--isolation-unknown-sources", "perhaps"}, "--isolation-unknown-sources"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--upstream", "300.1.1.1"}, "--upstream"},
		{[]string{"--upstream", "8.8.8.8:0"}, "--upstream"},
		{[]string{"--upstream", "none", "--upstream", "8.8.8.8"}, "--upstream"},
		{[]string{"--zone", ".."}, "--zone"},
		{[]string{"--zone", "."}, "--zone"},
		{[]string{"--listen", "53"}, "--listen"},
		{[]string{"--health-listen", "300.0.0.1:8080"}, "--health-listen"},
		{[]string{"--ready-listen", ":99999"}, "--ready-listen"},
		{[]string{"--metrics-listen", "x"}, "--metrics-listen"},
		{[]string{"--forward-timeout", "0s"}, "--forward-timeout"},
		{[]string{"--publish-interval", "-1s"}, "--publish-interval"},
		{[]string{"--cache-max-ttl", "-1s"}, "--cache-max-ttl"},
		{[]string{"--udp-sockets", "0"}, "--udp-sockets"},
		{[]string{"--allow-recursion", "10.0.0.0/33"}, "--allow-recursion"},
		{[]string{"--trusted-forwarders", "10.0.0.1"}, "--trusted-forwarders"},
		{[]string{"--pod-cidr", "10.244.0.1"}, "--pod-cidr"},
		{[]string{"--unknown-pod-wait", "-1s"}, "--unknown-pod-wait"},
		{[]string{"--list-page-size", "0"}, "--list-page-size"},
		{[]string{"--udp-batch", "0"}, "--udp-batch"},
		{[]string{"--memory-limit", "lots"}, "--memory-limit"},
		{[]string{"--no-such-flag"}, "-no-such-flag"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
	c, err := parseFlags([]string{"--zone", "cluster.local", "--zone", "in-addr.arpa,ip6.arpa", "--dns-namespace", "a", "--dns-namespace", "b",
		"--upstream", "8.8.8.8", "--upstream", "[2001:db8::1]:53", "--upstream", "dns.example:5353"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.unknownPodWait != 2*time.Second || len(c.podCIDRs) != 0 {
		t.Errorf("defaults: --unknown-pod-wait %s, --pod-cidr %v", c.unknownPodWait, c.podCIDRs)
	}
	if p, err := parseFlags([]string{"--pod-cidr", "10.244.0.0/16,10.245.1.2/16", "--unknown-pod-wait", "500ms"}, io.Discard); err != nil ||
		strings.Join(prefixStrings(p.podCIDRs), " ") != "10.244.0.0/16 10.245.0.0/16" || p.unknownPodWait != 500*time.Millisecond {
		t.Errorf("--pod-cidr and --unknown-pod-wait: %v, %v", p, err)
	}
	if strings.Join(c.zones.vals, " ") != "cluster.local in-addr.arpa ip6.arpa" || strings.Join(c.dnsNamespaces.vals, " ") != "a b" {
		t.Fatalf("zones %v namespaces %v", c.zones.vals, c.dnsNamespaces.vals)
	}
	c, _ = parseFlags(nil, io.Discard)
	if c.listen != ":53" || c.metricsListen != ":9153" || c.healthListen != ":8080" || c.readyListen != ":8181" || c.ttl != 5 || c.pods != "insecure" ||
		strings.Join(c.zones.vals, " ") != "cluster.local in-addr.arpa ip6.arpa" {
		t.Fatalf("defaults: %+v", c)
	}
}

// TestHelpAndVersion: --help looks like a Kubernetes component's (the
// program's flags with "--", then the logging flags, then the
// subcommands), and --version names the build.
func TestHelpAndVersion(t *testing.T) {
	var out strings.Builder
	if _, err := parseFlags([]string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	help := out.String()
	for _, want := range []string{"Usage:\n  partition-dns [flags]", "Available Commands:", "node-cache ", "node-cache-watch ",
		"\nFlags:\n", "--tenant-server-kubeconfig", "--zone strings", `(default "/etc/resolv.conf")`, "--version", "\nLogging flags:\n", "--v "} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q:\n%s", want, help)
		}
	}
	if flags, logging := strings.Index(help, "--zone"), strings.Index(help, "Logging flags:"); flags > logging || strings.Index(help, "--vmodule") < logging {
		t.Errorf("the program's flags must come first and klog's in their group:\n%s", help)
	}
	if strings.Contains(help, "\n  -zone") {
		t.Errorf("Go-style single-dash flags in --help:\n%s", help)
	}
	out.Reset()
	if _, err := parseFlags([]string{"--version"}, &out); !errors.Is(err, cliflag.ErrVersion) {
		t.Fatalf("--version: %v", err)
	}
	if !strings.HasPrefix(out.String(), "partition-dns ") || !strings.Contains(out.String(), "commit ") || !strings.Contains(out.String(), runtime.Version()) {
		t.Errorf("--version printed %q", out.String())
	}
}

// TestProgram runs partition-dns as main does, on 3 fake TPs seeded from
// examples/tps, limited to tenant acme.
func TestProgram(t *testing.T) {
	cl := faketp.StartT(t, faketp.Options{Partitions: 3})
	if err := cl.SeedDir("../../examples/tps"); err != nil {
		t.Fatal(err)
	}
	dnsAddr, health, metrics := freePort(t), freePort(t), freePort(t)
	runProgram(t, []string{
		"--tenant-server-kubeconfig", strings.Join(cl.KubeconfigPaths(), ","),
		"--listen", dnsAddr, "--health-listen", health, "--metrics-listen", metrics, "--ready-listen", "",
		"--upstream", "none", "--dns-tenant", "acme", "--ttl", "30", "--system-partition", "tp2",
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if code, _ := get("http://" + health + "/readyz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := get("http://" + health + "/readyz/partitions"); code != 200 || !strings.Contains(body, "tp3: ok") {
		t.Errorf("/readyz/partitions: %d %q", code, body)
	}
	if code, _ := get("http://" + health + "/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	q := func(name string) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		r, err := dns.Exchange(m, dnsAddr)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := q("frontend.web.acme.svc.cluster.local."); len(r.Answer) != 1 || r.Answer[0].Header().Ttl != 30 {
		t.Errorf("acme: %v", r)
	}
	// --dns-tenant acme: other tenants, and the system tenant, are out of scope.
	if r := q("frontend.web.globex.svc.cluster.local."); r.Rcode != dns.RcodeNameError {
		t.Errorf("globex in scope: %v", r)
	}
	if r := q("kube-dns.kube-system.svc.cluster.local."); r.Rcode != dns.RcodeNameError {
		t.Errorf("system in scope: %v", r)
	}
	// ... except the API server's own service, which every pod uses.
	if r := q("kubernetes.default.svc.cluster.local."); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Errorf("kubernetes.default with --dns-tenant: %v", r)
	}
	if r := q("example.org."); r.Rcode != dns.RcodeRefused {
		t.Errorf("--upstream none: %v", r)
	}
	// A UDP answer is sent before its request is counted, so the counters
	// may lag the answers by a moment: scrape until they all show, or 5s.
	wants := []string{
		`tpkit_dns_requests_total{rcode="NOERROR",type="A",zone="cluster.local."} 2`,
		`tpkit_dns_requests_total{rcode="NXDOMAIN",type="A",zone="cluster.local."} 2`,
		`tpkit_dns_requests_total{rcode="REFUSED",type="A",zone="."} 1`,
		`tpkit_dns_partition_synced{partition="tp1"} 1`,
		`tpkit_dns_partition_stale{partition="tp2"} 0`,
		`tpkit_dns_partition_objects{kind="services",partition="tp1"} 4`, // acme's and system's default/kubernetes
		`tpkit_dns_programming_latency_seconds_count`,
		`tpkit_dns_request_duration_seconds_bucket`,
		`tpkit_partition_reachable{partition="tp3"} 1`,
	}
	missing := func(body string) []string {
		var out []string
		for _, want := range wants {
			if !strings.Contains(body, want) {
				out = append(out, want)
			}
		}
		return out
	}
	_, body := get("http://" + metrics + "/metrics")
	for deadline := time.Now().Add(5 * time.Second); len(missing(body)) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		_, body = get("http://" + metrics + "/metrics")
	}
	for _, want := range missing(body) {
		t.Errorf("/metrics lacks %q", want)
	}
}

// TestGCPercents: the first lists load at GOGC 100 only under a memory
// limit and a lower --gc-percent, which takes over once they are in; a
// negative flag leaves Go's default alone throughout.
func TestGCPercents(t *testing.T) {
	for _, tc := range []struct {
		flag         int
		limited      bool
		start, after int
	}{
		{25, true, 100, 25},
		{25, false, 25, -1},
		{100, true, 100, -1},
		{200, true, 200, -1},
		{0, true, 100, 0},
		{-1, true, -1, -1},
		{-1, false, -1, -1},
	} {
		if start, after := gcPercents(tc.flag, tc.limited); start != tc.start || after != tc.after {
			t.Errorf("gcPercents(%d, %v) = %d, %d; want %d, %d", tc.flag, tc.limited, start, after, tc.start, tc.after)
		}
	}
}

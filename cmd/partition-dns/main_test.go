package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/faketp"
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

func TestFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"--pods", "maybe"}, {"--ttl", "4000"}, {"--isolation-unknown-sources", "perhaps"}, {"extra"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	c, err := parseFlags([]string{"--zone", "cluster.local", "--zone", "in-addr.arpa,ip6.arpa", "--dns-namespace", "a", "--dns-namespace", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.zones.vals, " ") != "cluster.local in-addr.arpa ip6.arpa" || strings.Join(c.dnsNamespaces.vals, " ") != "a b" {
		t.Fatalf("zones %v namespaces %v", c.zones.vals, c.dnsNamespaces.vals)
	}
	c, _ = parseFlags(nil)
	if c.listen != ":53" || c.metricsListen != ":9153" || c.healthListen != ":8080" || c.ttl != 5 || c.pods != "insecure" || strings.Join(c.zones.vals, "") != "cluster.local" {
		t.Fatalf("defaults: %+v", c)
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
	c, err := parseFlags([]string{
		"--tenant-server-kubeconfig", strings.Join(cl.KubeconfigPaths(), ","),
		"--listen", dnsAddr, "--health-listen", health, "--metrics-listen", metrics,
		"--upstream", "none", "--dns-tenant", "acme", "--ttl", "30", "--system-partition", "tp2",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, c) }()
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
	if r := q("example.org."); r.Rcode != dns.RcodeRefused {
		t.Errorf("--upstream none: %v", r)
	}
	// A UDP answer is sent before its request is counted, so the counters
	// may lag the answers by a moment: scrape until they all show, or 5s.
	wants := []string{
		`tpkit_dns_requests_total{rcode="NOERROR",type="A",zone="cluster.local."} 1`,
		`tpkit_dns_requests_total{rcode="NXDOMAIN",type="A",zone="cluster.local."} 2`,
		`tpkit_dns_requests_total{rcode="REFUSED",type="A",zone="."} 1`,
		`tpkit_dns_partition_synced{partition="tp1"} 1`,
		`tpkit_dns_partition_stale{partition="tp2"} 0`,
		`tpkit_dns_partition_objects{kind="services",partition="tp1"} 3`,
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
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
	"github.com/tpkit-dev/tpkit/testbed/upstreamtest"
)

// TestKubeDNSConfigMap: each TP's kube-system/kube-dns ConfigMap (kube-dns's
// stubDomains and upstreamNameservers) steers the names outside the zones
// that its own pods ask, and no other TP's: real UDP queries from the
// examples' pod addresses of tp1 (127.0.0.2) and tp2 (127.0.0.3), the
// ConfigMap written through the TP's API. A ConfigMap that does not parse
// changes nothing and is counted; deleting it restores --upstream.
func TestKubeDNSConfigMap(t *testing.T) {
	t.Parallel()
	def := upstreamtest.Nameserver(t, "192.0.2.1", 0)   // --upstream
	stub := upstreamtest.Nameserver(t, "192.0.2.2", 0)  // tp2's stub domain acme.local
	other := upstreamtest.Nameserver(t, "192.0.2.3", 0) // tp2's upstreamNameservers

	cl := faketp.StartT(t, faketp.Options{Partitions: 2})
	if err := cl.SeedDir("../../examples/tps"); err != nil {
		t.Fatal(err)
	}
	tp2 := cl.TP("tp2")
	if err := tp2.Seed(map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "ext", "namespace": "default", "tenant": "system"},
		"spec":     map[string]any{"type": "ExternalName", "externalName": "www.acme.local"},
	}); err != nil {
		t.Fatal(err)
	}
	dnsAddr, health, metrics := freePort(t), freePort(t), freePort(t)
	runProgram(t, []string{
		"--tenant-server-kubeconfig", strings.Join(cl.KubeconfigPaths(), ","),
		"--listen", dnsAddr, "--health-listen", health, "--metrics-listen", metrics, "--ready-listen", "",
		"--upstream", def, "--cache-size", "100",
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if code, _ := get("http://" + health + "/readyz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
	}

	// ask sends name from a pod's address and returns the answer's A
	// addresses and CNAME targets, in order.
	ask := func(from, name string) []string {
		t.Helper()
		c := &dns.Client{Net: "udp", Timeout: 5 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP(from)}}}
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		r, _, err := c.Exchange(m, dnsAddr)
		if err != nil {
			t.Fatalf("%s from %s: %v", name, from, err)
		}
		var out []string
		for _, rr := range r.Answer {
			switch rr := rr.(type) {
			case *dns.A:
				out = append(out, rr.A.String())
			case *dns.CNAME:
				out = append(out, rr.Target)
			}
		}
		return out
	}
	const tp1Pod, tp2Pod = "127.0.0.2", "127.0.0.3"
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	is := func(got []string, want ...string) bool { return strings.Join(got, " ") == strings.Join(want, " ") }

	if got := ask(tp2Pod, "abc.acme.local."); !is(got, "192.0.2.1") {
		t.Fatalf("before any ConfigMap, tp2's pod got %v, want --upstream's 192.0.2.1", got)
	}

	cms := func(tp string) partitiontest.Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
		c, err := partitiontest.NewClients(cl.TP(tp).RESTConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.CoreV1().ConfigMaps("kube-system")
	}
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"}, Data: map[string]string{
		"stubDomains":         `{"acme.local": ["` + stub + `"]}`,
		"upstreamNameservers": `["` + other + `"]`,
	}}
	cm, err := cms("tp2").Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	until("tp2's pod asks acme.local of its stub domain", func() bool { return is(ask(tp2Pod, "abc.acme.local."), "192.0.2.2") })
	if got := ask(tp2Pod, "www.example.org."); !is(got, "192.0.2.3") {
		t.Errorf("tp2's pod, other names: %v, want its upstreamNameservers' 192.0.2.3", got)
	}
	// An ExternalName's target outside the zones is asked as its pod would.
	if got := ask(tp2Pod, "ext.default.svc.cluster.local."); !is(got, "www.acme.local.", "192.0.2.2") {
		t.Errorf("tp2's ExternalName into its stub domain: %v", got)
	}
	for _, name := range []string{"abc.acme.local.", "www.example.org."} {
		if got := ask(tp1Pod, name); !is(got, "192.0.2.1") {
			t.Errorf("tp1's pod, %s: %v, want --upstream's 192.0.2.1: tp2's ConfigMap is not tp1's", name, got)
		}
	}

	// Four upstreams are one too many for kube-dns: refused, nothing changes.
	cm.Data = map[string]string{"upstreamNameservers": `["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]`}
	if cm, err = cms("tp2").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	until("the bad ConfigMap is counted", func() bool {
		_, body := get("http://" + metrics + "/metrics")
		return strings.Contains(body, `tpkit_dns_kube_dns_config_errors_total{partition="tp2"} 1`)
	})
	if got := ask(tp2Pod, "abc.acme.local."); !is(got, "192.0.2.2") {
		t.Errorf("after a bad ConfigMap, tp2's pod got %v: it should keep the last good one", got)
	}
	_, body := get("http://" + metrics + "/metrics")
	for _, want := range []string{`tpkit_dns_kube_dns_config{partition="tp1"} 0`, `tpkit_dns_kube_dns_config{partition="tp2"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	if err := cms("tp2").Delete(ctx, "kube-dns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until("tp2's pod is back on --upstream", func() bool { return is(ask(tp2Pod, "abc.acme.local."), "192.0.2.1") })
}

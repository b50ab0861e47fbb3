package kubednsconfig

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tpkit-dev/tpkit/pkg/dns/upstream"
	"github.com/tpkit-dev/tpkit/testbed/upstreamtest"
)

func TestForwarders(t *testing.T) {
	def, stub, up := upstreamtest.Nameserver(t, "192.0.2.1", 30), upstreamtest.Nameserver(t, "192.0.2.2", 30), upstreamtest.Nameserver(t, "192.0.2.3", 30)
	cache := upstream.Config{SuccessCapacity: 100, SuccessTTL: time.Minute, DenialCapacity: 100, DenialTTL: time.Minute}
	defR, err := upstream.NewResolver(upstream.ResolverConfig{Cache: cache, Routes: []upstream.Route{{Zone: ".", Upstream: upstream.NewServersUpstream([]string{def}, time.Second)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	f, err := New(Options{Partitions: []string{"tp1", "tp2"}, Default: defR, DefaultServers: []string{def}, Cache: cache,
		ServerTimeout: time.Second, QueryTimeout: 3 * time.Second, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(tp int, name string) string {
		t.Helper()
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		r, err := f.ResolveFor(context.Background(), tp, m)
		if err != nil {
			t.Fatalf("%s for tp %d: %v", name, tp, err)
		}
		if len(r.Answer) != 1 {
			return dns.RcodeToString[r.Rcode]
		}
		return r.Answer[0].(*dns.A).A.String()
	}
	check := func(what string, tp int, name, want string) {
		t.Helper()
		if got := ask(tp, name); got != want {
			t.Errorf("%s: tp %d, %s: %s, want %s", what, tp, name, got, want)
		}
	}
	check("default", 1, "a.acme.local.", "192.0.2.1") // now cached by the default

	if err := f.Apply(1, map[string]string{"stubDomains": `{"acme.local": ["` + stub + `"]}`}); err != nil {
		t.Fatal(err)
	}
	check("stub domain, not the default's cached answer", 1, "a.acme.local.", "192.0.2.2")
	check("stub only: other names go to the default servers", 1, "www.example.org.", "192.0.2.1")
	check("another TP", 0, "a.acme.local.", "192.0.2.1")
	check("no known TP", -1, "a.acme.local.", "192.0.2.1")

	if err := f.Apply(1, map[string]string{"stubDomains": `{"acme.local": ["` + stub + `"]}`, "upstreamNameservers": `["` + up + `"]`}); err != nil {
		t.Fatal(err)
	}
	check("upstreamNameservers", 1, "www.example.org.", "192.0.2.3")
	check("a stub domain's subdomain", 1, "x.y.acme.local.", "192.0.2.2")

	if err := f.Apply(1, map[string]string{"upstreamNameservers": `["not-an-ip"]`}); err == nil {
		t.Fatal("a bad ConfigMap was taken")
	}
	check("after a bad ConfigMap", 1, "www.example.org.", "192.0.2.3")
	if got := testutil.ToFloat64(f.errs.WithLabelValues("tp2")); got != 1 {
		t.Errorf("errors counted: %v", got)
	}
	if got := testutil.ToFloat64(f.inForce.WithLabelValues("tp2")); got != 1 {
		t.Errorf("tpkit_dns_kube_dns_config for tp2: %v", got)
	}

	f.Remove(1)
	check("removed", 1, "www.example.org.", "192.0.2.1")
	if got := testutil.ToFloat64(f.inForce.WithLabelValues("tp2")); got != 0 {
		t.Errorf("tpkit_dns_kube_dns_config after the removal: %v", got)
	}
	if err := f.Apply(1, map[string]string{"Corefile": "."}); err != nil || testutil.ToFloat64(f.inForce.WithLabelValues("tp2")) != 0 {
		t.Errorf("a ConfigMap without kube-dns's keys: %v, in force %v", err, testutil.ToFloat64(f.inForce.WithLabelValues("tp2")))
	}
	check("a ConfigMap without kube-dns's keys", 1, "www.example.org.", "192.0.2.1")
}

// TestForwardersWithoutDefault: with --upstream none, a TP without a
// configuration gets REFUSED, and one with stub domains only has no other
// upstream either.
func TestForwardersWithoutDefault(t *testing.T) {
	stub := upstreamtest.Nameserver(t, "192.0.2.2", 30)
	f, err := New(Options{Partitions: []string{"tp1"}, ServerTimeout: time.Second, QueryTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := new(dns.Msg)
	m.SetQuestion("a.acme.local.", dns.TypeA)
	if r, err := f.ResolveFor(context.Background(), 0, m); err != nil || r.Rcode != dns.RcodeRefused {
		t.Fatalf("no default: %v %v", r, err)
	}
	if err := f.Apply(0, map[string]string{"stubDomains": `{"acme.local": ["` + stub + `"]}`}); err != nil {
		t.Fatal(err)
	}
	if r, err := f.ResolveFor(context.Background(), 0, m); err != nil || len(r.Answer) != 1 {
		t.Fatalf("stub: %v %v", r, err)
	}
	m.SetQuestion("www.example.org.", dns.TypeA)
	if r, err := f.ResolveFor(context.Background(), 0, m); err == nil && len(r.Answer) > 0 {
		t.Fatalf("a name outside the stub domains was answered: %v", r)
	}
}

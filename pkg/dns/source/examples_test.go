package source_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/client-go/rest"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/server"
	"github.com/tpkit-dev/tpkit/pkg/dns/source"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

// startExamples runs the source over 3 fake TPs seeded from examples/tps.
func startExamples(t *testing.T, o source.Options) *index.Builder {
	c := faketp.StartT(t, faketp.Options{Partitions: 3})
	if err := c.SeedDir("../../../examples/tps"); err != nil {
		t.Fatal(err)
	}
	var names []string
	var cfgs []*rest.Config
	for _, tp := range c.TPs() {
		names = append(names, tp.Name())
		cfgs = append(cfgs, tp.RESTConfig())
	}
	return runSource(t, names, cfgs, o)
}

// runSource runs the source with o, and its index's publisher, over the TPs
// of cfgs, and returns the index once every TP has synced and that is
// published.
func runSource(t *testing.T, names []string, cfgs []*rest.Config, o source.Options) *index.Builder {
	set, err := partition.NewFromConfigs(names, cfgs, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := index.NewBuilder(index.Options{Partitions: names})
	src, err := source.New(set.Partitions(), b, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	src.Start(ctx)
	go b.Run(ctx, 10*time.Millisecond)
	if !src.WaitForSync(ctx, time.Minute) {
		t.Fatal("partitions did not sync")
	}
	for b.Publish() {
	}
	return b
}

// TestNamespaceScope: --dns-namespace serves those namespaces and default.
func TestNamespaceScope(t *testing.T) {
	b := startExamples(t, source.Options{Namespaces: []string{"kube-system"}})
	h, addr := serve(t, b, server.Options{})
	h.MarkSynced()
	for name, rcode := range map[string]int{
		"kube-dns.kube-system.svc.cluster.local.": dns.RcodeSuccess,
		"kubernetes.default.svc.cluster.local.":   dns.RcodeSuccess,
		"frontend.web.acme.svc.cluster.local.":    dns.RcodeNameError,
	} {
		if r := ask(t, addr, "udp", "127.0.0.1", name, dns.TypeA); r.Rcode != rcode {
			t.Errorf("%s: %s", name, dns.RcodeToString[r.Rcode])
		}
	}
	if _, err := source.New(nil, b, source.Options{Namespaces: []string{"Not_A_Label"}}); err == nil {
		t.Error("bad --dns-namespace accepted")
	}
}

// TestExamples keeps make demo honest: the manifests in examples/tps give the
// answers the demo prints.
func TestExamples(t *testing.T) {
	b := startExamples(t, source.Options{})
	h, addr := serve(t, b, server.Options{Pods: server.PodsInsecure, Isolation: true, AllowUnknownSources: true})
	h.MarkSynced()
	for _, x := range []struct {
		from, name string
		qtype      uint16
		want       string
	}{
		{"127.0.0.1", "frontend.web.acme.svc.cluster.local.", dns.TypeA, "10.96.10.1"},
		{"127.0.0.1", "frontend.web.acme.svc.cluster.local.", dns.TypeAAAA, "fd00:96::10:1"},
		{"127.0.0.1", "frontend.web.globex.svc.cluster.local.", dns.TypeA, "10.97.10.1"},
		{"127.0.0.1", "db.web.acme.svc.cluster.local.", dns.TypeA, "10.244.1.10,10.244.1.11"},
		{"127.0.0.1", "db-0.db.web.acme.svc.cluster.local.", dns.TypeA, "10.244.1.10"},
		{"127.0.0.1", "search.web.acme.svc.cluster.local.", dns.TypeCNAME, "www.example.com."},
		{"127.0.0.2", "kube-dns.kube-system.svc.cluster.local.", dns.TypeA, "10.96.0.10"},
		{"127.0.0.3", "kube-dns.kube-system.svc.cluster.local.", dns.TypeA, "10.97.0.10"},
		{"127.0.0.1", "metrics-server.kube-system.svc.cluster.local.", dns.TypeA, "10.98.0.20"},
		{"127.0.0.11", "frontend.web.globex.svc.cluster.local.", dns.TypeA, ""},
	} {
		r := ask(t, addr, "udp", x.from, x.name, x.qtype)
		var got []string
		for _, rr := range r.Answer {
			got = append(got, strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
		if strings.Join(got, ",") != x.want {
			t.Errorf("%s %s from %s: %s %v, want %q", x.name, dns.TypeToString[x.qtype], x.from, dns.RcodeToString[r.Rcode], got, x.want)
		}
	}
}

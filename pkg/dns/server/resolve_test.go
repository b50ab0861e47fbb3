package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/names"
)

// resolveQuestion runs the resolver alone, as respondQuery does after
// reading a request: no message, no socket, no wire format out.
func resolveQuestion(t *testing.T, h *Handler, name string, qtype, qclass uint16, from string) *result {
	t.Helper()
	st := h.pool.Get().(*state)
	t.Cleanup(func() { h.pool.Put(st) })
	n := names.FromDotted(st.lw[:], strings.ToLower(name))
	if n < 0 {
		t.Fatalf("%s: not a name", name)
	}
	if st.nl = names.Split(st.lw[:n], st.offs[:]); st.nl < 0 {
		t.Fatalf("%s: not a name", name)
	}
	z, ok := h.zoneOf(st.lw[:n], st.offs[:st.nl])
	if !ok {
		return &result{outcome: forwarded}
	}
	return h.resolve(st, z, qtype, qclass, ip(from))
}

// failingForwarder is a forwarder that never answers: the resolver only
// needs to know there is one.
type failingForwarder struct{}

func (failingForwarder) Resolve(context.Context, *dns.Msg) (*dns.Msg, error) {
	return nil, errors.New("no upstream")
}

// describe writes the records of res one per line, section and owner first
// where they are not the answer and the question's name.
func describe(h *Handler, res *result) []string {
	var out []string
	for _, rec := range res.records {
		var b strings.Builder
		switch rec.section {
		case authoritySection:
			b.WriteString("authority ")
		case extraSection:
			b.WriteString("extra ")
		}
		switch rec.owner {
		case ownerTarget:
			b.WriteString(serviceNameString(&rec.target) + " ")
		case ownerNameServer:
			b.WriteString("ns.dns." + res.zone.name + " ")
		}
		switch rec.kind {
		case rrAddr:
			if rec.addr.Is4() {
				fmt.Fprintf(&b, "A %s", rec.addr)
			} else {
				fmt.Fprintf(&b, "AAAA %s", rec.addr)
			}
		case rrCNAME:
			b.WriteString("CNAME " + rec.text)
		case rrSRV:
			fmt.Fprintf(&b, "SRV %d %d %s", rec.weight, rec.port, serviceNameString(&rec.target))
		case rrPTR:
			o := rec.owns
			tenant := o.Tenant + "."
			if o.Tenant == "system" {
				tenant = ""
			}
			host := o.Host()
			if host != "" {
				host += "."
			}
			fmt.Fprintf(&b, "PTR %s%s.%s.%ssvc.%s", host, o.Service(), o.Namespace, tenant, h.primary.name)
		case rrNS:
			b.WriteString("NS ns.dns." + res.zone.name)
		case rrSOA:
			b.WriteString("SOA " + res.zone.name)
		case rrTXT:
			b.WriteString("TXT " + rec.text)
		}
		out = append(out, b.String())
	}
	return out
}

func serviceNameString(n *serviceName) string {
	s := n.service.Name + "." + n.namespace.Namespace + "."
	if n.host != nil {
		s = n.host.Host() + "." + s
	}
	if !n.legacy {
		s += n.namespace.Tenant + "."
	}
	return s + "svc." + n.zone.name
}

// TestResolver is the resolver's table: a question and a querier in, a
// result out (outcome, answering partition, whether the querier's identity
// mattered, records), one line per case, no sockets. The fixture has
// kube-dns in tp1 (10.0.0.10) and tp2 (10.1.0.10); pods 127.0.0.2 (system,
// tp1), 127.0.0.3 (system, tp2), 127.0.0.11 (alpha, tp1), 127.0.0.21 (beta,
// tp2); tenant gamma in tp2 and tp3.
func TestResolver(t *testing.T) {
	b := fixture(t)
	o := Options{Zones: []string{"cluster.local", "in-addr.arpa", "ip6.arpa"}, TTL: 5, NSAddrs: ips("127.0.0.1"), Pods: PodsInsecure}
	newHandler := func(mod func(*Options), synced bool) *Handler {
		o := o
		if mod != nil {
			mod(&o)
		}
		h, err := New(b, o)
		if err != nil {
			t.Fatal(err)
		}
		if synced {
			h.MarkSynced()
		}
		return h
	}
	plain := newHandler(nil, true)
	isolated := newHandler(func(o *Options) { o.Isolation = true }, true)
	forwarding := newHandler(func(o *Options) { o.Forwarder = failingForwarder{} }, true)
	unsynced := newHandler(nil, false)
	const (
		anyone = "127.0.0.99"
		tp1Pod = "127.0.0.2"
		tp2Pod = "127.0.0.3"
		alpha  = "127.0.0.11"
		beta   = "127.0.0.21"
		zone   = "cluster.local."
		soa    = "authority SOA cluster.local."
	)
	kube := "kube-dns.kube-system.svc." + zone
	cases := []struct {
		h        *Handler
		name     string
		qtype    uint16
		from     string
		outcome  outcome
		tp       string // the partition that answered, "" for none
		identity bool
		records  []string
	}{
		// The apex and the special names.
		{plain, zone, dns.TypeSOA, anyone, answered, "", false, []string{"SOA cluster.local."}},
		{plain, zone, dns.TypeNS, anyone, answered, "", true, []string{"NS ns.dns.cluster.local.", "extra ns.dns.cluster.local. A 127.0.0.1"}},
		{plain, zone, dns.TypeA, anyone, answered, "", false, []string{soa}},
		{plain, "ns.dns." + zone, dns.TypeA, anyone, answered, "", true, []string{"A 127.0.0.1"}},
		{plain, "ns.dns." + zone, dns.TypeTXT, anyone, noSuchName, "", false, []string{soa}},
		{plain, "dns-version." + zone, dns.TypeTXT, anyone, answered, "", false, []string{"TXT 1.1.0"}},
		{plain, "dns-version." + zone, dns.TypeA, anyone, noSuchName, "", false, []string{soa}},
		{plain, "foo." + zone, dns.TypeA, anyone, noSuchName, "", false, []string{soa}},
		{plain, "svc." + zone, dns.TypeA, anyone, answered, "", false, []string{soa}},
		{plain, "kube-system.svc." + zone, dns.TypeSOA, anyone, answered, "", false, []string{soa}},
		// A system service: the querier's partition first, else the
		// system partition; with 3 partitions the identity matters.
		{plain, kube, dns.TypeA, anyone, answered, "tp1", true, []string{"A 10.0.0.10"}},
		{plain, kube, dns.TypeA, tp2Pod, answered, "tp2", true, []string{"A 10.1.0.10"}},
		{plain, kube, dns.TypeA, beta, answered, "tp2", true, []string{"A 10.1.0.10"}},
		{plain, kube, dns.TypeAAAA, tp1Pod, answered, "tp1", true, []string{soa}},
		{plain, kube, dns.TypeMX, tp1Pod, answered, "tp1", true, []string{soa}},
		{plain, "kubernetes.default.svc." + zone, dns.TypeA, tp2Pod, answered, "tp1", true, []string{"A 10.0.0.1"}},
		{plain, "kube-dns.kube-system.system.svc." + zone, dns.TypeA, anyone, answered, "tp1", true, []string{"A 10.0.0.10"}},
		{plain, "nope.kube-system.svc." + zone, dns.TypeA, anyone, noSuchName, "", true, []string{soa}},
		// SRV: one per port, the cluster IP as additional; named ports.
		{plain, kube, dns.TypeSRV, anyone, answered, "tp1", true, []string{
			"SRV 33 53 " + kube, "SRV 33 9153 " + kube, "extra " + kube + " A 10.0.0.10"}},
		{plain, "_dns._udp." + kube, dns.TypeSRV, anyone, answered, "tp1", true, []string{"SRV 100 53 " + kube, "extra " + kube + " A 10.0.0.10"}},
		{plain, "_http._tcp." + kube, dns.TypeSRV, anyone, noSuchName, "", true, []string{soa}},
		// Headless services and endpoint names.
		{plain, "db.default.svc." + zone, dns.TypeA, anyone, answered, "tp1", true, []string{"A 10.244.0.5", "A 10.244.0.6"}},
		{plain, "db-0.db.default.svc." + zone, dns.TypeA, anyone, answered, "tp1", true, []string{"A 10.244.0.5"}},
		{plain, "10-244-0-6.db.default.svc." + zone, dns.TypeA, anyone, answered, "tp1", true, []string{"A 10.244.0.6"}},
		{plain, "_mysql._tcp.db.default.svc." + zone, dns.TypeSRV, anyone, answered, "tp1", true, []string{
			"SRV 50 3306 db-0.db.default.svc." + zone, "SRV 50 3306 10-244-0-6.db.default.svc." + zone,
			"extra db-0.db.default.svc." + zone + " A 10.244.0.5", "extra 10-244-0-6.db.default.svc." + zone + " A 10.244.0.6"}},
		{plain, "empty.default.svc." + zone, dns.TypeA, anyone, noSuchName, "", true, []string{soa}},
		// Dual stack, no ports, ExternalName.
		{plain, "dual.default.svc." + zone, dns.TypeAAAA, anyone, answered, "tp1", true, []string{"AAAA fd00::20"}},
		{plain, "noports.default.svc." + zone, dns.TypeSRV, anyone, answered, "tp1", true, []string{soa}},
		{plain, "ext.default.svc." + zone, dns.TypeCNAME, anyone, answered, "tp1", true, []string{"CNAME example.com."}},
		{plain, "ext.default.svc." + zone, dns.TypeA, anyone, answered, "tp1", true, []string{"CNAME example.com."}},
		// Regular tenants: their home partition only, no identity without
		// isolation; gamma is in tp2 and tp3, and the lower index wins.
		{plain, "api.web.alpha.svc." + zone, dns.TypeA, beta, answered, "tp1", false, []string{"A 10.0.1.1"}},
		{plain, "api.web.beta.svc." + zone, dns.TypeA, alpha, answered, "tp2", false, []string{"A 10.1.1.1"}},
		{plain, "_http._tcp.api.web.beta.svc." + zone, dns.TypeSRV, anyone, answered, "tp2", false, []string{
			"SRV 100 80 api.web.beta.svc." + zone, "extra api.web.beta.svc." + zone + " A 10.1.1.1"}},
		{plain, "s.x.gamma.svc." + zone, dns.TypeA, anyone, answered, "tp2", false, []string{"A 10.1.2.1"}},
		// These names also read as system ones (namespace alpha, service
		// web...), which are looked for per partition first.
		{plain, "web.alpha.svc." + zone, dns.TypeA, anyone, answered, "tp1", true, []string{soa}},
		{plain, "alpha.svc." + zone, dns.TypeA, anyone, answered, "", true, []string{soa}},
		{plain, "api.web.delta.svc." + zone, dns.TypeA, anyone, noSuchName, "", true, []string{soa}},
		// Isolation: a tenant sees its own and system names only.
		{isolated, "api.web.alpha.svc." + zone, dns.TypeA, alpha, answered, "tp1", true, []string{"A 10.0.1.1"}},
		{isolated, "api.web.beta.svc." + zone, dns.TypeA, alpha, noSuchName, "", true, []string{soa}},
		{isolated, "api.web.beta.svc." + zone, dns.TypeA, tp1Pod, answered, "tp2", true, []string{"A 10.1.1.1"}},
		{isolated, "api.web.alpha.svc." + zone, dns.TypeA, anyone, noSuchName, "", true, []string{soa}},
		{isolated, kube, dns.TypeA, alpha, answered, "tp1", true, []string{"A 10.0.0.10"}},
		// Pods.
		{plain, "10-0-0-99.default.pod." + zone, dns.TypeA, anyone, answered, "tp1", true, []string{"A 10.0.0.99"}},
		{plain, "1-2-3-4.web.alpha.pod." + zone, dns.TypeA, anyone, answered, "tp1", false, []string{"A 1.2.3.4"}},
		{plain, "bad.default.pod." + zone, dns.TypeA, anyone, noSuchName, "", true, []string{soa}},
		// PTR: the querier's partition first; a cluster IP wins.
		{plain, "10.0.0.10.in-addr.arpa.", dns.TypePTR, anyone, answered, "tp1", true, []string{"PTR " + kube}},
		{plain, "10.0.1.10.in-addr.arpa.", dns.TypePTR, anyone, answered, "tp2", true, []string{"PTR " + kube}},
		{plain, "1.1.0.10.in-addr.arpa.", dns.TypePTR, beta, answered, "tp1", true, []string{"PTR api.web.alpha.svc." + zone}},
		{plain, "5.0.244.10.in-addr.arpa.", dns.TypePTR, anyone, answered, "tp1", true, []string{"PTR db-0.db.default.svc." + zone}},
		{isolated, "1.1.0.10.in-addr.arpa.", dns.TypePTR, beta, noSuchName, "", true, []string{"authority SOA in-addr.arpa."}},
		{plain, "9.9.9.10.in-addr.arpa.", dns.TypePTR, anyone, noSuchName, "", false, []string{"authority SOA in-addr.arpa."}},
		{forwarding, "9.9.9.10.in-addr.arpa.", dns.TypePTR, anyone, forwarded, "", false, nil},
		// Not ours, refused, not synced yet.
		{plain, "example.org.", dns.TypeA, anyone, forwarded, "", false, nil},
		{plain, zone, dns.TypeAXFR, anyone, refused, "", false, nil},
		{plain, zone, dns.TypeIXFR, anyone, refused, "", false, nil},
		{unsynced, "nope.kube-system.svc." + zone, dns.TypeA, anyone, notSynced, "", true, []string{soa}},
		{unsynced, kube, dns.TypeA, anyone, answered, "tp1", true, []string{"A 10.0.0.10"}},
	}
	for _, c := range cases {
		res := resolveQuestion(t, c.h, c.name, c.qtype, dns.ClassINET, c.from)
		what := fmt.Sprintf("%s %s from %s", c.name, dns.TypeToString[c.qtype], c.from)
		tp := ""
		if res.fromTP {
			tp = fmt.Sprintf("tp%d", res.tp+1)
		}
		if res.outcome != c.outcome || tp != c.tp || res.identity != c.identity {
			t.Errorf("%s: outcome %d, partition %q, identity %v; want %d, %q, %v", what, res.outcome, tp, res.identity, c.outcome, c.tp, c.identity)
		}
		if got := describe(c.h, res); strings.Join(got, "\n") != strings.Join(c.records, "\n") {
			t.Errorf("%s: records\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(c.records, "\n"))
		}
	}
	// A class other than IN is refused.
	if res := resolveQuestion(t, plain, kube, dns.TypeA, dns.ClassCHAOS, anyone); res.outcome != refused || len(res.records) != 0 {
		t.Errorf("CHAOS: %+v", res)
	}
	// An ExternalName outside the zones names its target for the upstream.
	if res := resolveQuestion(t, plain, "ext.default.svc."+zone, dns.TypeA, dns.ClassINET, anyone); res.upstream != "example.com." {
		t.Errorf("ExternalName upstream %q, want example.com.", res.upstream)
	}
}

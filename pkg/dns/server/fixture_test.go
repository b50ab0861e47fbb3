package server

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
)

var (
	ip  = netip.MustParseAddr
	tcp = "TCP"
	udp = "UDP"
)

func prefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, x := range s {
		out = append(out, netip.MustParsePrefix(x))
	}
	return out
}

func ips(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, x := range s {
		out = append(out, ip(x))
	}
	return out
}

// fixture populates three partitions the way the informer source would:
// system services in tp1 and tp2 (kube-dns in both, with different IPs),
// tenant alpha in tp1, beta in tp2, and gamma in tp2 and tp3 (a conflict).
func fixture(t testing.TB) *index.Builder {
	b := index.NewBuilder(index.Options{Partitions: []string{"tp1", "tp2", "tp3"}})
	for tp := 0; tp < 2; tp++ {
		b.SetNamespace(tp, "system", "kube-system", true)
		b.SetNamespace(tp, "system", "default", true)
	}
	dnsPorts := []index.Port{{Name: "dns", Protocol: udp, Port: 53}, {Name: "dns-tcp", Protocol: tcp, Port: 53}, {Name: "metrics", Protocol: tcp, Port: 9153}}
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "kube-system", Name: "kube-dns", ClusterIPs: ips("10.0.0.10"), Ports: dnsPorts})
	b.SetService(1, &index.Service{Tenant: "system", Namespace: "kube-system", Name: "kube-dns", ClusterIPs: ips("10.1.0.10"), Ports: dnsPorts})
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "default", Name: "kubernetes", ClusterIPs: ips("10.0.0.1"), Ports: []index.Port{{Name: "https", Protocol: tcp, Port: 443}}})
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "default", Name: "db", Type: index.Headless, Ports: []index.Port{{Name: "mysql", Protocol: tcp, Port: 3306}}})
	b.SetEndpointSlice(0, &index.EndpointSlice{Tenant: "system", Namespace: "default", Name: "db-abc", Service: "db",
		Ports:     []index.Port{{Name: "mysql", Protocol: tcp, Port: 3306}},
		Endpoints: []index.Endpoint{{Addrs: ips("10.244.0.5"), Hostname: "db-0"}, {Addrs: ips("10.244.0.6")}}})
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "default", Name: "empty", Type: index.Headless, Ports: []index.Port{{Port: index.NoPort}}})
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "default", Name: "dual", ClusterIPs: ips("10.0.0.20", "fd00::20"), Ports: []index.Port{{Name: "http", Protocol: tcp, Port: 80}}})
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "default", Name: "ext", Type: index.ExternalName, ExternalName: "example.com.", Ports: []index.Port{{Port: index.NoPort}}})
	b.SetService(0, &index.Service{Tenant: "system", Namespace: "default", Name: "noports", ClusterIPs: ips("10.0.0.30"), Ports: []index.Port{{Port: index.NoPort}}})
	b.SetPod(0, &index.Pod{Tenant: "system", Namespace: "kube-system", Name: "agent-tp1", IPs: ips("127.0.0.2")})
	b.SetPod(1, &index.Pod{Tenant: "system", Namespace: "kube-system", Name: "agent-tp2", IPs: ips("127.0.0.3")})

	b.SetNamespace(0, "alpha", "web", true)
	b.SetService(0, &index.Service{Tenant: "alpha", Namespace: "web", Name: "api", ClusterIPs: ips("10.0.1.1"), Ports: []index.Port{{Name: "http", Protocol: tcp, Port: 80}}})
	b.SetPod(0, &index.Pod{Tenant: "alpha", Namespace: "web", Name: "client", IPs: ips("127.0.0.11")})
	b.SetNamespace(1, "beta", "web", true)
	b.SetService(1, &index.Service{Tenant: "beta", Namespace: "web", Name: "api", ClusterIPs: ips("10.1.1.1"), Ports: []index.Port{{Name: "http", Protocol: tcp, Port: 80}}})
	b.SetPod(1, &index.Pod{Tenant: "beta", Namespace: "web", Name: "client", IPs: ips("127.0.0.21")})
	b.SetNamespace(1, "gamma", "x", true)
	b.SetService(1, &index.Service{Tenant: "gamma", Namespace: "x", Name: "s", ClusterIPs: ips("10.1.2.1"), Ports: []index.Port{{Port: index.NoPort}}})
	b.SetNamespace(2, "gamma", "x", true)
	b.SetService(2, &index.Service{Tenant: "gamma", Namespace: "x", Name: "s", ClusterIPs: ips("10.2.2.1"), Ports: []index.Port{{Port: index.NoPort}}})
	b.Publish()
	return b
}

// newHandler is startServer without the sockets: a synced Handler with
// startServer's defaults, for tests that call Respond.
func newHandler(t testing.TB, snaps Snapshots, o Options) *Handler {
	t.Helper()
	h := newUnsyncedHandler(t, snaps, o)
	h.MarkSynced()
	return h
}

// newUnsyncedHandler is newHandler before MarkSynced.
func newUnsyncedHandler(t testing.TB, snaps Snapshots, o Options) *Handler {
	t.Helper()
	if o.Zones == nil {
		o.Zones = []string{"cluster.local", "in-addr.arpa", "ip6.arpa"}
	}
	if o.TTL == 0 {
		o.TTL = 5
	}
	if o.NSAddrs == nil {
		o.NSAddrs = ips("127.0.0.1")
	}
	h, err := New(snaps, o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// askDirect is ask without sockets: the answer h.Respond gives to one
// question from from, over UDP (tcp false) or TCP.
func askDirect(t testing.TB, h *Handler, tcp bool, from, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	out := h.Respond(m, ip(from), tcp)
	if out == nil {
		t.Fatalf("%s %s from %s: forwarded", name, dns.TypeToString[qtype], from)
	}
	r := new(dns.Msg)
	if err := r.Unpack(out); err != nil {
		t.Fatalf("%s: unpacking the answer: %v", name, err)
	}
	return r
}

type testServer struct {
	addr string
	h    *Handler
}

func startServer(t testing.TB, snaps Snapshots, o Options) *testServer {
	t.Helper()
	if o.UDPBatch == 0 {
		o.UDPBatch = 32 // as partition-dns: the socket tests run the batched path
	}
	h := newHandler(t, snaps, o)
	l, err := Listen("127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = Serve(ctx, l, h) }()
	t.Cleanup(func() { cancel(); <-done; l.Close() })
	return &testServer{addr: l.Addr(), h: h}
}

// query sends one question from source address from ("" for 127.0.0.1)
// over net ("udp" or "tcp").
func ask(t testing.TB, addr, network, from, name string, qtype uint16, edns uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	if edns > 0 {
		m.SetEdns0(edns, false)
	}
	c := &dns.Client{Net: network, Dialer: &net.Dialer{}}
	if from == "" {
		from = "127.0.0.1"
	}
	if network == "tcp" {
		c.Dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	} else {
		c.Dialer.LocalAddr = &net.UDPAddr{IP: net.ParseIP(from)}
	}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s %s from %s: %v", network, name, dns.TypeToString[qtype], from, err)
	}
	if r.Id != m.Id {
		t.Fatalf("id mismatch")
	}
	return r
}

func rrStrings(t testing.TB, rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		out = append(out, rr.String())
	}
	sort.Strings(out)
	return out
}

func parseRRs(t testing.TB, ss []string) []string {
	var out []string
	for _, s := range ss {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatalf("bad expected RR %q: %v", s, err)
		}
		out = append(out, rr.String())
	}
	sort.Strings(out)
	return out
}

func equal(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// dnsCase is one table row, in the style of CoreDNS's test.Case.
type dnsCase struct {
	Qname  string
	Qtype  uint16
	From   string
	Rcode  int
	Answer []string
	Ns     []string
	Extra  []string
	// Forwarded, for checkDirect only, says the name goes to the
	// forwarder: Respond gives no answer of its own.
	Forwarded bool
}

func (c dnsCase) check(t *testing.T, addr string, serial uint32) {
	t.Helper()
	for _, network := range []string{"udp", "tcp"} {
		r := ask(t, addr, network, c.From, c.Qname, c.Qtype, 0)
		c.verify(t, network, r, serial)
	}
}

// checkDirect is check without sockets: the answers h.Respond gives over
// UDP and over TCP.
func (c dnsCase) checkDirect(t *testing.T, h *Handler, serial uint32) {
	t.Helper()
	from := c.From
	if from == "" {
		from = "127.0.0.1"
	}
	for _, tcp := range []bool{false, true} {
		m := new(dns.Msg)
		m.SetQuestion(c.Qname, c.Qtype)
		network := map[bool]string{false: "udp", true: "tcp"}[tcp]
		out := h.Respond(m, ip(from), tcp)
		if (out == nil) != c.Forwarded {
			t.Errorf("%s %s %s from %s: forwarded %v, want %v", network, c.Qname, dns.TypeToString[c.Qtype], from, out == nil, c.Forwarded)
			continue
		}
		if out == nil {
			continue
		}
		r := new(dns.Msg)
		if err := r.Unpack(out); err != nil {
			t.Fatalf("%s %s: unpacking the answer: %v", network, c.Qname, err)
		}
		if r.Id != m.Id {
			t.Fatalf("%s %s: id mismatch", network, c.Qname)
		}
		c.verify(t, network, r, serial)
	}
}

// verify compares the answer r that came over network with the case.
func (c dnsCase) verify(t *testing.T, network string, r *dns.Msg, serial uint32) {
	t.Helper()
	name := network + " " + c.Qname + " " + dns.TypeToString[c.Qtype] + " from " + c.From
	if r.Rcode != c.Rcode {
		t.Errorf("%s: rcode %s, want %s\n%v", name, dns.RcodeToString[r.Rcode], dns.RcodeToString[c.Rcode], r)
		return
	}
	ns := c.Ns
	if ns == nil && (c.Rcode == dns.RcodeNameError || (c.Rcode == dns.RcodeSuccess && len(c.Answer) == 0)) {
		ns = []string{soa(serial)}
	}
	if got, want := rrStrings(t, r.Answer), parseRRs(t, c.Answer); !equal(got, want) {
		t.Errorf("%s: answer\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := rrStrings(t, r.Ns), parseRRs(t, ns); !equal(got, want) {
		t.Errorf("%s: authority\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := rrStrings(t, r.Extra), parseRRs(t, c.Extra); !equal(got, want) {
		t.Errorf("%s: extra\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !r.Authoritative {
		t.Errorf("%s: not authoritative", name)
	}
	if err := cnameOrder(r.Answer); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

// cnameOrder checks that no record comes before the CNAME that leads to
// its owner, as CoreDNS's test.CNAMEOrder does.
func cnameOrder(rrs []dns.RR) error {
	for i, rr := range rrs {
		c, ok := rr.(*dns.CNAME)
		if !ok {
			continue
		}
		for _, before := range rrs[:i] {
			if strings.EqualFold(before.Header().Name, c.Target) {
				return fmt.Errorf("%v comes before the CNAME to it", before)
			}
		}
	}
	return nil
}

func soa(serial uint32) string { return soaOf("cluster.local.", serial) }

// soaOf is the SOA record of zone, as the authority of negative answers.
func soaOf(zone string, serial uint32) string {
	return zone + " 5 IN SOA ns.dns." + zone + " hostmaster." + zone + " " + itoa(serial) + " 7200 1800 86400 5"
}

func itoa(v uint32) string {
	var b [12]byte
	i := len(b)
	if v == 0 {
		return "0"
	}
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}

package cache

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tpkit-dev/tpkit/pkg/dns/server"
	"github.com/tpkit-dev/tpkit/pkg/dns/upstream"
	"github.com/tpkit-dev/tpkit/testbed/upstreamtest"
)

// testUpstream is a real DNS server on loopback that answers by name and counts
// queries per transport.
type testUpstream struct {
	addr    string
	answer  string // A record value
	failing atomic.Bool
	delay   atomic.Int64 // nanoseconds
	ttl     atomic.Uint32

	mu     sync.Mutex
	counts map[string]int // "proto name"
}

func startUpstream(t testing.TB, answer string) *testUpstream {
	t.Helper()
	u := &testUpstream{answer: answer, counts: map[string]int{}}
	u.ttl.Store(300)
	pc, ln := upstreamtest.Listen(t)
	u.addr = pc.LocalAddr().String()
	mux := dns.HandlerFunc(u.serve)
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: mux}, {Listener: ln, Handler: mux}} {
		go func() { _ = s.ActivateAndServe() }()
		t.Cleanup(func() { _ = s.Shutdown() })
	}
	return u
}

func (u *testUpstream) count(proto, name string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.counts[proto+" "+name]
}

func (u *testUpstream) serve(w dns.ResponseWriter, r *dns.Msg) {
	q := r.Question[0]
	proto := "udp"
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		proto = "tcp"
	}
	u.mu.Lock()
	u.counts[proto+" "+strings.ToLower(q.Name)]++
	u.mu.Unlock()
	if d := u.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	m := new(dns.Msg)
	m.SetReply(r)
	switch {
	case u.failing.Load():
		m.Rcode = dns.RcodeServerFailure
	case strings.HasPrefix(q.Name, "nx."):
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{upstreamtest.RR(fmt.Sprintf(upstreamtest.SOA, 30))}
	case strings.HasPrefix(q.Name, "big."):
		for i := 0; i < 100; i++ {
			m.Answer = append(m.Answer, upstreamtest.RR(fmt.Sprintf("%s %d IN A 10.3.%d.%d", q.Name, u.ttl.Load(), i/250, i%250+1)))
		}
	default:
		m.Answer = []dns.RR{upstreamtest.RR(fmt.Sprintf("%s %d IN A %s", q.Name, u.ttl.Load(), u.answer))}
	}
	_ = w.WriteMsg(m)
}

// listenLoopback binds partition-dns's sockets on a free loopback port,
// retrying when the TCP side of the kernel's chosen port is taken.
func listenLoopback(t testing.TB) *server.Listener {
	t.Helper()
	for try := 0; ; try++ {
		l, err := server.Listen("127.0.0.1:0", 2)
		if err == nil {
			return l
		}
		if try == 20 {
			t.Fatal(err)
		}
	}
}

// stopServer cancels a server.Serve and waits for it; if it misses the
// shutdown (a cancel that lands before a server has started), closing the
// sockets ends it.
func stopServer(cancel context.CancelFunc, done <-chan struct{}, l *server.Listener) {
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		l.Close()
		<-done
	}
}

type fixture struct {
	h        *Handler
	reg      *prometheus.Registry
	clk      *upstreamtest.Clock
	cluster  *testUpstream
	host     *testUpstream
	udpAddr  string
	tcpAddr  string
	identity string
}

func newFixture(t *testing.T, mutate func(*HandlerConfig)) *fixture {
	t.Helper()
	f := &fixture{clk: upstreamtest.NewClock(), reg: prometheus.NewRegistry(), identity: "node-1"}
	f.cluster = startUpstream(t, "10.2.2.2")
	f.host = startUpstream(t, "192.0.2.7")
	cfg := HandlerConfig{
		Cache: upstream.DefaultConfig(),
		Routes: []upstream.Route{
			{Zone: "cluster.local", Upstream: upstream.NewTCPUpstream(f.cluster.addr, time.Second), Label: "cluster"},
			{Zone: ".", Upstream: upstream.NewServersUpstream([]string{f.host.addr}, time.Second), Label: "host"},
		},
		Identity: f.identity,
		Now:      f.clk.Now,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := NewHandler(cfg, f.reg)
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	l := listenLoopback(t)
	f.udpAddr, f.tcpAddr = l.Addr(), l.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var serveErr error
	go func() { serveErr = server.Serve(ctx, l, h); close(done) }()
	t.Cleanup(func() {
		stopServer(cancel, done, l)
		if serveErr != nil {
			t.Errorf("serve: %v", serveErr)
		}
		h.Wait()
	})
	return f
}

func (f *fixture) query(t *testing.T, proto, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: proto, Timeout: 3 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	addr := f.udpAddr
	if proto == "tcp" {
		addr = f.tcpAddr
	}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s %s: %v", proto, name, err)
	}
	if r.Id != m.Id || len(r.Question) != 1 || r.Question[0].Name != name {
		t.Fatalf("answer does not match the query: %v", r)
	}
	return r
}

func aValue(r *dns.Msg) string {
	for _, a := range r.Answer {
		if x, ok := a.(*dns.A); ok {
			return x.A.String()
		}
	}
	return ""
}

func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			ok := true
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				ok = ok && found
			}
			if ok {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func TestHandlerRoutesAndCaches(t *testing.T) {
	f := newFixture(t, nil)
	name := "kubernetes.default.svc.cluster.local."
	r := f.query(t, "udp", name, dns.TypeA)
	if aValue(r) != "10.2.2.2" || r.Answer[0].Header().Ttl != 30 {
		t.Fatalf("first answer %v", r)
	}
	// The cluster zone went to its upstream over TCP only.
	if f.cluster.count("tcp", name) != 1 || f.cluster.count("udp", name) != 0 {
		t.Errorf("cluster upstream saw tcp=%d udp=%d", f.cluster.count("tcp", name), f.cluster.count("udp", name))
	}
	f.clk.Add(10 * time.Second)
	for _, proto := range []string{"udp", "tcp", "udp"} {
		r = f.query(t, proto, strings.ToUpper(name[:5])+name[5:], dns.TypeA)
		if aValue(r) != "10.2.2.2" || r.Answer[0].Header().Ttl != 20 {
			t.Errorf("%s hit answer %v", proto, r)
		}
	}
	if f.cluster.count("tcp", name) != 1 {
		t.Errorf("hits reached the upstream: %d", f.cluster.count("tcp", name))
	}
	// Other zones go to the host's resolvers.
	r = f.query(t, "udp", "example.com.", dns.TypeA)
	if aValue(r) != "192.0.2.7" || f.host.count("udp", "example.com.") != 1 || f.cluster.count("tcp", "example.com.") != 0 {
		t.Errorf("host route: %v", r)
	}
	// Denials are cached with the denial cap.
	r = f.query(t, "udp", "nx.cluster.local.", dns.TypeA)
	if r.Rcode != dns.RcodeNameError {
		t.Fatalf("nx answer %v", r)
	}
	r = f.query(t, "udp", "nx.cluster.local.", dns.TypeA)
	if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 || r.Ns[0].Header().Ttl != 5 || f.cluster.count("tcp", "nx.cluster.local.") != 1 {
		t.Errorf("denial hit %v, upstream saw %d", r, f.cluster.count("tcp", "nx.cluster.local."))
	}
	f.clk.Add(6 * time.Second)
	f.query(t, "udp", "nx.cluster.local.", dns.TypeA)
	if f.cluster.count("tcp", "nx.cluster.local.") != 2 {
		t.Errorf("denial not refreshed after its 5 s cap")
	}
	if got := counter(t, f.reg, "tpkit_nodelocal_cache_hits_total", "type", "success"); got != 3 {
		t.Errorf("success hits = %v", got)
	}
	if got := counter(t, f.reg, "tpkit_nodelocal_cache_hits_total", "type", "denial"); got != 1 {
		t.Errorf("denial hits = %v", got)
	}
	if got := counter(t, f.reg, "tpkit_nodelocal_cache_misses_total"); got != 4 {
		t.Errorf("misses = %v", got)
	}
	if got := counter(t, f.reg, "tpkit_nodelocal_cache_entries", "type", "success"); got != 2 {
		t.Errorf("success entries = %v", got)
	}
}

func TestHandlerServesStaleWhenUpstreamFails(t *testing.T) {
	f := newFixture(t, nil)
	name := "web.default.svc.cluster.local."
	f.query(t, "udp", name, dns.TypeA)
	f.clk.Add(31 * time.Second)
	f.cluster.failing.Store(true)
	r := f.query(t, "udp", name, dns.TypeA)
	if aValue(r) != "10.2.2.2" || r.Rcode != dns.RcodeSuccess || r.Answer[0].Header().Ttl != 30 {
		t.Errorf("stale answer %v", r)
	}
	if got := counter(t, f.reg, "tpkit_nodelocal_cache_stale_answers_total"); got != 1 {
		t.Errorf("stale answers = %v", got)
	}
	// Without a stale entry, a failing upstream gives SERVFAIL.
	if r := f.query(t, "udp", "other.cluster.local.", dns.TypeA); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("no stale entry: %v", r)
	}
	// Past the stale window, nothing is served.
	f.clk.Add(time.Hour)
	if r := f.query(t, "udp", name, dns.TypeA); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("past the stale window: %v", r)
	}
	// The upstream is back: a fresh answer replaces the stale one.
	f.cluster.failing.Store(false)
	if r := f.query(t, "udp", name, dns.TypeA); aValue(r) != "10.2.2.2" || r.Answer[0].Header().Ttl != 30 {
		t.Errorf("after recovery: %v", r)
	}
	if got := counter(t, f.reg, "tpkit_nodelocal_upstream_errors_total", "route", "cluster"); got != 0 {
		t.Errorf("SERVFAIL answers counted as transport errors: %v", got)
	}
}

func TestHandlerStaleOnUpstreamDown(t *testing.T) {
	// The cluster upstream is an address nothing listens on after the first answer.
	f := newFixture(t, func(c *HandlerConfig) { c.UpstreamTimeout = 300 * time.Millisecond })
	name := "db.default.svc.cluster.local."
	f.query(t, "udp", name, dns.TypeA)
	f.cluster.delay.Store(int64(time.Second)) // slower than the upstream timeout
	f.clk.Add(40 * time.Second)
	r := f.query(t, "tcp", name, dns.TypeA)
	if aValue(r) != "10.2.2.2" {
		t.Errorf("stale on timeout: %v", r)
	}
	if got := counter(t, f.reg, "tpkit_nodelocal_upstream_errors_total", "route", "cluster"); got != 1 {
		t.Errorf("upstream errors = %v", got)
	}
}

func TestHandlerPrefetchesPopularEntries(t *testing.T) {
	f := newFixture(t, nil)
	hot, cold := "hot.default.svc.cluster.local.", "cold.default.svc.cluster.local."
	f.query(t, "udp", hot, dns.TypeA)
	f.query(t, "udp", cold, dns.TypeA)
	f.query(t, "udp", hot, dns.TypeA) // hit 1, early: no prefetch
	f.clk.Add(28 * time.Second)       // 2 s of 30 s left: under 10 %
	f.query(t, "udp", hot, dns.TypeA) // hit 2 near expiry: prefetch
	f.query(t, "udp", cold, dns.TypeA)
	f.h.Wait()
	if n := f.cluster.count("tcp", hot); n != 2 {
		t.Errorf("hot name fetched %d times, want 2 (one prefetch)", n)
	}
	if n := f.cluster.count("tcp", cold); n != 1 {
		t.Errorf("cold name fetched %d times, want 1", n)
	}
	f.clk.Add(5 * time.Second) // the original entry would have expired
	r := f.query(t, "udp", hot, dns.TypeA)
	if aValue(r) != "10.2.2.2" || f.cluster.count("tcp", hot) != 2 {
		t.Errorf("prefetched entry not served: %v, fetched %d", r, f.cluster.count("tcp", hot))
	}
	if got := counter(t, f.reg, "tpkit_nodelocal_cache_prefetches_total"); got != 1 {
		t.Errorf("prefetches = %v", got)
	}
}

func TestHandlerSharesConcurrentMisses(t *testing.T) {
	f := newFixture(t, nil)
	f.cluster.delay.Store(int64(200 * time.Millisecond))
	name := "busy.default.svc.cluster.local."
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dns.Client{Net: "udp", Timeout: 3 * time.Second}
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			if r, _, err := c.Exchange(m, f.udpAddr); err != nil || aValue(r) != "10.2.2.2" {
				t.Errorf("concurrent query: %v %v", r, err)
			}
		}()
	}
	wg.Wait()
	if n := f.cluster.count("tcp", name); n < 1 || n > 2 {
		t.Errorf("20 concurrent misses made %d upstream queries", n)
	}
}

func TestHandlerIdentityAndBadQueries(t *testing.T) {
	f := newFixture(t, nil)
	c := &dns.Client{Net: "udp", Timeout: 3 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion("id.server.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	r, _, err := c.Exchange(m, f.udpAddr)
	if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 || r.Answer[0].(*dns.TXT).Txt[0] != f.identity {
		t.Fatalf("id.server: %v %v", r, err)
	}
	m.SetQuestion("version.bind.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	if r, _, err = c.Exchange(m, f.udpAddr); err != nil || r.Rcode != dns.RcodeRefused {
		t.Errorf("version.bind: %v %v", r, err)
	}
	// Two questions: FORMERR, not a crash.
	m = new(dns.Msg)
	m.SetQuestion("a.cluster.local.", dns.TypeA)
	m.Question = append(m.Question, m.Question[0])
	if r, _, err = c.Exchange(m, f.udpAddr); err != nil || r.Rcode != dns.RcodeFormatError {
		t.Errorf("two questions: %v %v", r, err)
	}
	if f.cluster.count("tcp", "id.server.") != 0 {
		t.Errorf("identity query forwarded")
	}
}

func TestHandlerTruncatesForUDP(t *testing.T) {
	f := newFixture(t, nil)
	name := "big.default.svc.cluster.local."
	r := f.query(t, "udp", name, dns.TypeA)
	r.Compress = true // the size on the wire
	if !r.Truncated || r.Len() > dns.MinMsgSize || len(r.Answer) == 0 {
		t.Errorf("UDP answer of 100 records: truncated=%v len=%d", r.Truncated, r.Len())
	}
	r = f.query(t, "tcp", name, dns.TypeA)
	if r.Truncated || len(r.Answer) != 100 {
		t.Errorf("TCP answer: truncated=%v answers=%d", r.Truncated, len(r.Answer))
	}
}

func TestHandlerDrainingFailsOnlyTheProbe(t *testing.T) {
	f := newFixture(t, nil)
	probe := func() int {
		c := &dns.Client{Net: "udp", Timeout: 3 * time.Second}
		m := new(dns.Msg)
		m.SetQuestion("id.server.", dns.TypeTXT)
		m.Question[0].Qclass = dns.ClassCHAOS
		r, _, err := c.Exchange(m, f.udpAddr)
		if err != nil {
			t.Fatal(err)
		}
		return r.Rcode
	}
	if rc := probe(); rc != dns.RcodeSuccess {
		t.Fatalf("probe before draining: %s", dns.RcodeToString[rc])
	}
	f.h.SetDraining(true)
	if rc := probe(); rc != dns.RcodeRefused {
		t.Errorf("probe while draining: %s, want REFUSED", dns.RcodeToString[rc])
	}
	if r := f.query(t, "udp", "web.default.svc.cluster.local.", dns.TypeA); aValue(r) != "10.2.2.2" {
		t.Errorf("query while draining: %v", r)
	}
}

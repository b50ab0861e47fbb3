package upstream

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tpkit-dev/tpkit/testbed/upstreamtest"
)

// cannedServer is a real DNS server on loopback with canned zone data.
type cannedServer struct {
	addr    string
	queries atomic.Int32
	tcp     atomic.Int32
}

func startCanned(t *testing.T) *cannedServer {
	u := &cannedServer{}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		u.queries.Add(1)
		_, isTCP := w.RemoteAddr().(*net.TCPAddr)
		if isTCP {
			u.tcp.Add(1)
		}
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		exampleSOA, _ := dns.NewRR("example. 120 IN SOA ns.example. h.example. 1 2 3 4 60")
		switch q.Name {
		case "a.example.":
			rr, _ := dns.NewRR("a.example. 300 IN A 192.0.2.1")
			m.Answer = []dns.RR{rr}
		case "short.example.":
			rr, _ := dns.NewRR("short.example. 3 IN A 192.0.2.3")
			m.Answer = []dns.RR{rr}
		case "nx.example.":
			m.Rcode = dns.RcodeNameError
			m.Ns = []dns.RR{exampleSOA}
		case "fail.example.":
			m.Rcode = dns.RcodeServerFailure
		case "big.example.":
			if !isTCP {
				m.Truncated = true
				break
			}
			for i := 0; i < 100; i++ {
				rr, _ := dns.NewRR("big.example. 300 IN A 192.0.2." + itoa(i))
				m.Answer = append(m.Answer, rr)
			}
		default:
			m.Rcode = dns.RcodeNameError
			m.Ns = []dns.RR{exampleSOA}
		}
		_ = w.WriteMsg(m)
	})
	pc, ln := upstreamtest.Listen(t)
	s1 := &dns.Server{PacketConn: pc, Handler: h}
	s2 := &dns.Server{Listener: ln, Handler: h}
	go func() { _ = s1.ActivateAndServe() }()
	go func() { _ = s2.ActivateAndServe() }()
	t.Cleanup(func() { _ = s1.Shutdown(); _ = s2.Shutdown() })
	u.addr = pc.LocalAddr().String()
	return u
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// forwarder is partition-dns's resolver (cmd/partition-dns newForwarder):
// one route for every name to servers, no prefetch, no serve-stale.
func forwarder(t *testing.T, now func() time.Time, timeout time.Duration, capacity int, servers ...string) *Resolver {
	t.Helper()
	r, err := NewResolver(ResolverConfig{
		Cache:           Config{SuccessCapacity: capacity, SuccessTTL: 30 * time.Second, DenialCapacity: capacity, DenialTTL: 20 * time.Second},
		Routes:          []Route{{Zone: ".", Upstream: NewServersUpstream(servers, timeout), Label: "upstream"}},
		UpstreamTimeout: time.Duration(len(servers)) * timeout,
		Now:             now,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ask(t *testing.T, r *Resolver, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	resp, err := r.Resolve(context.Background(), m)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if resp.Id != m.Id || resp.IsEdns0() != nil {
		t.Fatalf("%s: id %d, want %d; EDNS in the answer to a query without: %v", name, resp.Id, m.Id, resp.IsEdns0())
	}
	return resp
}

// TestResolveCachesWithCaps is partition-dns's forward cache: answers are
// cached and served with TTLs capped (30 s positive, 20 s negative, the
// SOA's minimum below that) and counted down; SERVFAIL is not cached.
func TestResolveCachesWithCaps(t *testing.T) {
	u := startCanned(t)
	clk := upstreamtest.NewClock()
	r := forwarder(t, clk.Now, 2*time.Second, 100, u.addr)

	if resp := ask(t, r, "a.example.", dns.TypeA); len(resp.Answer) != 1 || resp.Answer[0].Header().Ttl != 30 {
		t.Fatalf("first answer: %v", resp)
	}
	clk.Add(10 * time.Second)
	resp := ask(t, r, "A.Example.", dns.TypeA)
	if u.queries.Load() != 1 {
		t.Fatalf("second query went upstream (%d queries)", u.queries.Load())
	}
	if got := resp.Answer[0].Header().Ttl; got != 20 {
		t.Fatalf("cached TTL %d, want 30s cap minus 10s = 20", got)
	}
	clk.Add(21 * time.Second)
	ask(t, r, "a.example.", dns.TypeA)
	if u.queries.Load() != 2 {
		t.Fatalf("expired entry served from cache")
	}

	// Negative answers: min(SOA TTL 120, minimum 60) capped at 20s.
	if resp := ask(t, r, "nx.example.", dns.TypeA); resp.Rcode != dns.RcodeNameError {
		t.Fatalf("nx: %v", resp)
	}
	clk.Add(19 * time.Second)
	resp = ask(t, r, "nx.example.", dns.TypeA)
	if u.queries.Load() != 3 || resp.Rcode != dns.RcodeNameError || resp.Ns[0].Header().Ttl != 1 {
		t.Fatalf("negative cache: %d queries, %v", u.queries.Load(), resp)
	}
	clk.Add(2 * time.Second)
	ask(t, r, "nx.example.", dns.TypeA)
	if u.queries.Load() != 4 {
		t.Fatalf("negative entry outlived its cap")
	}

	// A short positive TTL is honoured below the cap.
	ask(t, r, "short.example.", dns.TypeA)
	clk.Add(4 * time.Second)
	ask(t, r, "short.example.", dns.TypeA)
	if u.queries.Load() != 6 {
		t.Fatalf("3s answer cached for 4s")
	}

	// SERVFAIL is not cached.
	ask(t, r, "fail.example.", dns.TypeA)
	ask(t, r, "fail.example.", dns.TypeA)
	if u.queries.Load() != 8 {
		t.Fatalf("SERVFAIL cached")
	}
	if h, m := testutil.ToFloat64(r.m.hits[Success])+testutil.ToFloat64(r.m.hits[Denial]), testutil.ToFloat64(r.m.misses); h != 2 || m != 8 {
		t.Fatalf("hits %v misses %v", h, m)
	}

	// A query with EDNS gets EDNS back.
	q := new(dns.Msg)
	q.SetQuestion("a.example.", dns.TypeA)
	q.SetEdns0(4096, true)
	if resp, err := r.Resolve(context.Background(), q); err != nil || resp.IsEdns0() == nil || !resp.IsEdns0().Do() {
		t.Fatalf("EDNS query: %v %v", resp, err)
	}
}

func TestResolveRetriesTruncatedOverTCP(t *testing.T) {
	u := startCanned(t)
	r := forwarder(t, nil, 2*time.Second, 100, u.addr)
	resp := ask(t, r, "big.example.", dns.TypeA)
	if resp.Truncated || len(resp.Answer) != 100 || u.tcp.Load() != 1 {
		t.Fatalf("truncated=%v answers=%d tcp=%d", resp.Truncated, len(resp.Answer), u.tcp.Load())
	}
}

// TestResolveFailsOver: a dead first server costs a timeout once; then the
// server that answered is asked first.
func TestResolveFailsOver(t *testing.T) {
	u := startCanned(t)
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.LocalAddr().String()
	dead.Close()
	r := forwarder(t, nil, 200*time.Millisecond, 0, deadAddr, u.addr)
	for i := 0; i < 3; i++ {
		if resp := ask(t, r, "a.example.", dns.TypeA); len(resp.Answer) != 1 {
			t.Fatalf("failover: %v", resp)
		}
	}
	if u.queries.Load() != 3 {
		t.Fatalf("cache disabled but %d upstream queries", u.queries.Load())
	}
	if got := r.routes[0].Upstream.(*ServersUpstream).first.Load(); got != 1 {
		t.Fatalf("the answering server is not asked first (first = %d)", got)
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{"192.0.2.53": "192.0.2.53:53", "192.0.2.53:5353": "192.0.2.53:5353",
		"2001:db8::53": "[2001:db8::53]:53", "[2001:db8::53]:54": "[2001:db8::53]:54", "dns.example": "dns.example:53"} {
		if got := HostPort(in); got != want {
			t.Errorf("HostPort(%q) = %q, want %q", in, got, want)
		}
	}
}

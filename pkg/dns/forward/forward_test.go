package forward

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// upstream is a real DNS server on loopback with canned zone data.
type upstream struct {
	addr    string
	queries atomic.Int32
	tcp     atomic.Int32
}

func startUpstream(t *testing.T) *upstream {
	u := &upstream{}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		u.queries.Add(1)
		_, isTCP := w.RemoteAddr().(*net.TCPAddr)
		if isTCP {
			u.tcp.Add(1)
		}
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		soa, _ := dns.NewRR("example. 120 IN SOA ns.example. h.example. 1 2 3 4 60")
		switch q.Name {
		case "a.example.":
			rr, _ := dns.NewRR("a.example. 300 IN A 192.0.2.1")
			m.Answer = []dns.RR{rr}
		case "short.example.":
			rr, _ := dns.NewRR("short.example. 3 IN A 192.0.2.3")
			m.Answer = []dns.RR{rr}
		case "nx.example.":
			m.Rcode = dns.RcodeNameError
			m.Ns = []dns.RR{soa}
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
			m.Ns = []dns.RR{soa}
		}
		_ = w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
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

func ask(t *testing.T, f *Forwarder, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, err := f.Resolve(context.Background(), m)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if r.Id != m.Id {
		t.Fatalf("%s: id %d, want %d", name, r.Id, m.Id)
	}
	return r
}

func TestCacheTTLs(t *testing.T) {
	u := startUpstream(t)
	f, err := New(Options{Upstreams: []string{u.addr}, MaxTTL: 30 * time.Second, MaxNegativeTTL: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now }

	r := ask(t, f, "a.example.", dns.TypeA)
	if len(r.Answer) != 1 || r.Answer[0].Header().Ttl != 300 {
		t.Fatalf("first answer: %v", r)
	}
	now = now.Add(10 * time.Second)
	r = ask(t, f, "A.Example.", dns.TypeA)
	if u.queries.Load() != 1 {
		t.Fatalf("second query went upstream (%d queries)", u.queries.Load())
	}
	if got := r.Answer[0].Header().Ttl; got != 20 {
		t.Fatalf("cached TTL %d, want 30s cap minus 10s = 20", got)
	}
	now = now.Add(21 * time.Second)
	ask(t, f, "a.example.", dns.TypeA)
	if u.queries.Load() != 2 {
		t.Fatalf("expired entry served from cache")
	}

	// Negative answers: min(SOA TTL 120, minimum 60) capped at 20s.
	r = ask(t, f, "nx.example.", dns.TypeA)
	if r.Rcode != dns.RcodeNameError {
		t.Fatalf("nx: %v", r)
	}
	now = now.Add(19 * time.Second)
	r = ask(t, f, "nx.example.", dns.TypeA)
	if u.queries.Load() != 3 || r.Rcode != dns.RcodeNameError || r.Ns[0].Header().Ttl != 1 {
		t.Fatalf("negative cache: %d queries, %v", u.queries.Load(), r)
	}
	now = now.Add(2 * time.Second)
	ask(t, f, "nx.example.", dns.TypeA)
	if u.queries.Load() != 4 {
		t.Fatalf("negative entry outlived its cap")
	}

	// A short positive TTL is honoured below the cap.
	ask(t, f, "short.example.", dns.TypeA)
	now = now.Add(4 * time.Second)
	ask(t, f, "short.example.", dns.TypeA)
	if u.queries.Load() != 6 {
		t.Fatalf("3s answer cached for 4s")
	}

	// SERVFAIL is not cached.
	ask(t, f, "fail.example.", dns.TypeA)
	ask(t, f, "fail.example.", dns.TypeA)
	if u.queries.Load() != 8 {
		t.Fatalf("SERVFAIL cached")
	}
	if h, m := testutil.ToFloat64(f.hits), testutil.ToFloat64(f.misses); h != 2 || m != 8 {
		t.Fatalf("hits %v misses %v", h, m)
	}
}

func TestTruncatedRetriedOverTCP(t *testing.T) {
	u := startUpstream(t)
	f, err := New(Options{Upstreams: []string{u.addr}})
	if err != nil {
		t.Fatal(err)
	}
	r := ask(t, f, "big.example.", dns.TypeA)
	if r.Truncated || len(r.Answer) != 100 || u.tcp.Load() != 1 {
		t.Fatalf("truncated=%v answers=%d tcp=%d", r.Truncated, len(r.Answer), u.tcp.Load())
	}
}

func TestFailover(t *testing.T) {
	u := startUpstream(t)
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.LocalAddr().String()
	dead.Close()
	f, err := New(Options{Upstreams: []string{deadAddr, u.addr}, Timeout: 200 * time.Millisecond, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if r := ask(t, f, "a.example.", dns.TypeA); len(r.Answer) != 1 {
			t.Fatalf("failover: %v", r)
		}
	}
	if u.queries.Load() != 3 {
		t.Fatalf("cache disabled but %d upstream queries", u.queries.Load())
	}
	if _, err := New(Options{}); err == nil {
		t.Fatal("no upstreams accepted")
	}
}

func TestUpstreamsFromResolvConf(t *testing.T) {
	p := t.TempDir() + "/resolv.conf"
	if err := writeFile(p, "search x\nnameserver 192.0.2.53\nnameserver 2001:db8::53\n"); err != nil {
		t.Fatal(err)
	}
	got, err := UpstreamsFromResolvConf(p)
	if err != nil || len(got) != 2 || got[0] != "192.0.2.53:53" || got[1] != "[2001:db8::53]:53" {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := UpstreamsFromResolvConf(t.TempDir() + "/missing"); err == nil {
		t.Fatal("missing file accepted")
	}
}

package cache

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/server"
	"github.com/tpkit-dev/tpkit/pkg/dns/upstream"
)

// floorHandler is the canned-answer floor of the DNS bench
// (test/bench/dns/floor): every query gets one A record, built with
// miekg/dns the ordinary way.
func floorHandler() dns.Handler {
	a := net.ParseIP("10.0.0.1").To4()
	return dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: a}}
		_ = w.WriteMsg(m)
	})
}

// serveForBench serves h on loopback with partition-dns's sockets (one UDP
// socket per core) and returns the address.
func serveForBench(b *testing.B, h dns.Handler) string {
	b.Helper()
	l := listenLoopback(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = server.Serve(ctx, l, h); close(done) }()
	b.Cleanup(func() { stopServer(cancel, done, l) })
	return l.Addr()
}

// loadUDP sends the query with b.RunParallel clients, each a connected UDP
// socket waiting for every answer, and reports queries per second.
func loadUDP(b *testing.B, addr, name string) {
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	wire, err := q.Pack()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		c, err := net.Dial("udp", addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		msg := append([]byte(nil), wire...)
		buf := make([]byte, 1500)
		var id uint16
		for pb.Next() {
			id++
			msg[0], msg[1] = byte(id>>8), byte(id)
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Write(msg); err != nil {
				b.Error(err)
				return
			}
			n, err := c.Read(buf)
			if err != nil {
				b.Error(err)
				return
			}
			// ID matches, QR set, RCODE NOERROR, one answer.
			if n < 12 || buf[0] != msg[0] || buf[1] != msg[1] || buf[2]&0x80 == 0 || buf[3]&0x0f != 0 || buf[7] != 1 {
				b.Errorf("bad answer %x", buf[:n])
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "qps")
}

// BenchmarkUDPFloorVsCacheHit compares the cache answering from a fresh
// entry with the canned-answer floor, on the same sockets and load in one
// run: the ratio of the two qps figures is the cost of the cache itself.
// Rounds alternate floor and cache so that noise on a shared machine hits
// both alike; compare the medians.
//
//	go test -run '^$' -bench UDPFloorVsCacheHit -benchtime 2s ./pkg/nodelocal/cache/
func BenchmarkUDPFloorVsCacheHit(b *testing.B) {
	name := "kubernetes.default.svc.cluster.local."
	for round := 1; round <= 5; round++ {
		b.Run(fmt.Sprintf("round%d/floor", round), func(b *testing.B) {
			loadUDP(b, serveForBench(b, floorHandler()), name)
		})
		b.Run(fmt.Sprintf("round%d/cache-hit", round), func(b *testing.B) {
			up := startUpstream(b, "10.2.2.2")
			h, err := NewHandler(HandlerConfig{
				Cache:  upstream.DefaultConfig(),
				Routes: []upstream.Route{{Zone: "cluster.local", Upstream: upstream.NewTCPUpstream(up.addr, time.Second), Label: "cluster"}},
			}, nil)
			if err != nil {
				b.Fatal(err)
			}
			addr := serveForBench(b, h)
			// Prime the entry; prefetching keeps it fresh past its 30 s cap.
			c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			if _, _, err := c.Exchange(m, addr); err != nil {
				b.Fatal(err)
			}
			loadUDP(b, addr, name)
			b.StopTimer()
			if n := up.count("tcp", name); n > 1+int(b.Elapsed()/(27*time.Second)) {
				b.Errorf("the upstream saw %d queries: hits are not hits", n)
			}
			h.Wait()
		})
	}
}

// BenchmarkServeDNSHit is the handler's hit path alone: lookup, copy of the
// records with their TTL, EDNS and truncation, writing.
func BenchmarkServeDNSHit(b *testing.B) {
	up := startUpstream(b, "10.2.2.2")
	h, err := NewHandler(HandlerConfig{
		Cache:  upstream.DefaultConfig(),
		Routes: []upstream.Route{{Zone: "cluster.local", Upstream: upstream.NewTCPUpstream(up.addr, time.Second), Label: "cluster"}},
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := new(dns.Msg)
	req.SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
	rec := &recorder{remote: &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5353}}
	h.ServeDNS(rec, req) // the miss that fills the cache
	h.ServeDNS(rec, req)
	if len(rec.msgs) != 2 || len(rec.msgs[1].Answer) != 1 {
		b.Fatalf("not answered: %v", rec.msgs)
	}
	w := &discard{recorder: recorder{remote: rec.remote}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ServeDNS(w, req)
	}
	b.StopTimer()
	if w.n != b.N {
		b.Fatalf("%d answers for %d queries", w.n, b.N)
	}
	h.Wait()
}

// discard counts answers without decoding them.
type discard struct {
	recorder
	n int
}

func (d *discard) Write(b []byte) (int, error) { d.n++; return len(b), nil }
func (d *discard) WriteMsg(m *dns.Msg) error   { d.n++; return nil }

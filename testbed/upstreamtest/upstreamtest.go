// Package upstreamtest has what the tests of pkg/dns/upstream and of its
// users share: a fake clock and upstream answers written in presentation
// format.
package upstreamtest

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Clock is a fake clock the tests move by hand; Now is its reading.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at a fixed time.
func NewClock() *Clock { return &Clock{t: time.Unix(1_700_000_000, 0)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// RR parses one record in presentation format; it panics on a typo, which
// is the test's bug.
func RR(s string) dns.RR {
	r, err := dns.NewRR(s)
	if err != nil {
		panic(err)
	}
	return r
}

// Msg is an upstream answer with rcode and the given sections.
func Msg(rcode int, answer, ns []dns.RR) *dns.Msg {
	m := new(dns.Msg)
	m.Response = true
	m.Rcode = rcode
	m.Answer, m.Ns = answer, ns
	return m
}

// SOA is a negative answer's SOA record for cluster.local.; %d is its
// minimum.
const SOA = "cluster.local. 60 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 %d"

// Listen opens a UDP and a TCP socket on one kernel-chosen loopback port,
// as a DNS server has them, closed when the test ends. It tries again when
// another process holds the TCP side of the port the kernel chose for UDP.
func Listen(t testing.TB) (net.PacketConn, net.Listener) {
	t.Helper()
	for try := 0; ; try++ {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			t.Cleanup(func() { _ = pc.Close(); _ = ln.Close() })
			return pc, ln
		}
		_ = pc.Close()
		if try == 20 {
			t.Fatal(err)
		}
	}
}

// Nameserver serves DNS over UDP on a kernel-chosen loopback port until the
// test ends, answering every A question with one record of addr and ttl
// (and other types with no record), and returns its address: a stub domain's
// or an upstream's server, told apart by its address.
func Nameserver(t testing.TB, addr string, ttl uint32) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if q := r.Question[0]; q.Qtype == dns.TypeA {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: net.ParseIP(addr)})
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

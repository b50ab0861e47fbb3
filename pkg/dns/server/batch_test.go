package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestBatchedUDPUnderLoad: 8 clients each send 16 queries at once from
// their own socket, so that recvmmsg returns many packets at once (and
// stays within the kernel's default receive buffer, past which the kernel
// drops datagrams whatever the server does), with
// plain queries (fast path), names outside the zones (slow path: REFUSED
// without a forwarder) and truncated-on-purpose garbage (FORMERR) mixed.
// Every query gets its own answer.
func TestBatchedUDPUnderLoad(t *testing.T) {
	if !batchSupported {
		t.Skip("recvmmsg batches only on Linux")
	}
	s := startServer(t, fixture(t), Options{UDPBatch: 32})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- batchClient(s.addr, c)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// batchClient sends 16 queries at once, 10 times, and checks each answer
// by ID.
func batchClient(addr string, c int) error {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	type want struct {
		name  string
		rcode int
		a     string
	}
	for round := 0; round < 10; round++ {
		pending := map[uint16]want{}
		for i := 0; i < 16; i++ {
			id := uint16(c<<10 | round<<5 | i)
			w := want{kdns, dns.RcodeSuccess, "10.0.0.10"}
			switch i % 4 {
			case 1:
				w = want{fmt.Sprintf("x%d.example.org.", i), dns.RcodeRefused, ""}
			case 2:
				w = want{"api.web.alpha.svc.cluster.local.", dns.RcodeSuccess, "10.0.1.1"}
			}
			m := new(dns.Msg)
			m.SetQuestion(w.name, dns.TypeA)
			m.Id = id
			b, err := m.Pack()
			if err != nil {
				return err
			}
			if i%4 == 3 {
				b = b[:len(b)-3] // a cut question: FORMERR
				w = want{"", dns.RcodeFormatError, ""}
			}
			pending[id] = w
			if _, err := conn.Write(b); err != nil {
				return err
			}
		}
		buf := make([]byte, 2048)
		for len(pending) > 0 {
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := conn.Read(buf)
			if err != nil {
				return fmt.Errorf("client %d round %d: %d answers missing: %v", c, round, len(pending), err)
			}
			r := new(dns.Msg)
			if err := r.Unpack(buf[:n]); err != nil {
				return fmt.Errorf("client %d: answer does not parse: %v", c, err)
			}
			w, ok := pending[r.Id]
			if !ok {
				return fmt.Errorf("client %d: answer to an unknown or repeated ID %d", c, r.Id)
			}
			delete(pending, r.Id)
			got := ""
			if len(r.Answer) == 1 {
				if a, ok := r.Answer[0].(*dns.A); ok {
					got = a.A.String()
				}
			}
			if r.Rcode != w.rcode || got != w.a {
				return fmt.Errorf("client %d: %s: %s %q, want %s %q", c, w.name, dns.RcodeToString[r.Rcode], got, dns.RcodeToString[w.rcode], w.a)
			}
		}
	}
	return nil
}

// dialBatched starts a server on the batched path (skipping where there is
// none) and returns a UDP socket connected to it, with a deadline that
// ends a test whose answers never come.
func dialBatched(t *testing.T) net.Conn {
	t.Helper()
	if !batchSupported {
		t.Skip("recvmmsg batches only on Linux")
	}
	s := startServer(t, fixture(t), Options{UDPBatch: 32})
	conn, err := net.Dial("udp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestBatchedUDPAllocatesNothing: answering plain queries on the batched
// path allocates nothing per query, the socket read included. Garbage per
// query would make the collector mark the whole index again and again at
// high query rates, which costs more the larger the index.
func TestBatchedUDPAllocatesNothing(t *testing.T) {
	conn := dialBatched(t)
	m := new(dns.Msg)
	m.SetQuestion("api.web.alpha.svc.cluster.local.", dns.TypeA)
	q, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var failed error
	exchange := func() {
		for range 16 {
			if _, err := conn.Write(q); err != nil {
				failed = err
			}
		}
		for range 16 {
			if _, err := conn.Read(buf); err != nil {
				failed = err
			}
		}
	}
	exchange()
	allocs := testing.AllocsPerRun(50, exchange)
	if failed != nil {
		t.Fatal(failed)
	}
	var r dns.Msg
	if err := r.Unpack(buf); err != nil || len(r.Answer) != 1 {
		t.Fatalf("last answer: %v %v", err, r.Answer)
	}
	if allocs >= 1 {
		t.Errorf("%.1f allocations per 16 queries answered, want none", allocs)
	}
}

// TestBatchedUDPOverIPv6: on an IPv6 socket the batched path reads IPv6
// sources and IPv4 ones (mapped, on a dual-stack socket) and answers each
// at its own address. A querier's TP comes from its address, so 127.0.0.3
// (a system pod of tp2 in the fixture, which gets tp2's kube-dns) must come
// out as that IPv4 address, not as its mapped IPv6 form.
func TestBatchedUDPOverIPv6(t *testing.T) {
	if !batchSupported {
		t.Skip("recvmmsg batches only on Linux")
	}
	l, err := Listen("[::]:0", 1)
	if err != nil {
		t.Skipf("no IPv6 socket here: %v", err)
	}
	h := newHandler(t, fixture(t), Options{UDPBatch: 32})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = Serve(ctx, l, h) }()
	t.Cleanup(func() { cancel(); <-done; l.Close() })
	_, port, _ := net.SplitHostPort(l.Addr())
	for _, c := range []struct{ server, from, name, want string }{
		{"::1", "::1", kdns, "10.0.0.10"},
		{"127.0.0.1", "127.0.0.1", kdns, "10.0.0.10"},
		{"127.0.0.1", "127.0.0.3", kdns, "10.1.0.10"},
	} {
		r := ask(t, net.JoinHostPort(c.server, port), "udp", c.from, c.name, dns.TypeA, 0)
		if got := rrStrings(t, r.Answer); len(got) != 1 || !strings.HasSuffix(got[0], c.want) {
			t.Errorf("%s from %s: %v, want %s", c.name, c.from, got, c.want)
		}
	}
}

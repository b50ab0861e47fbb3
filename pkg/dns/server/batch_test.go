package server

import (
	"fmt"
	"net"
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

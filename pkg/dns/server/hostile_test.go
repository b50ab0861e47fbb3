package server

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// recordingForwarder answers every query with one A record after release
// is closed (immediately when it is nil), and counts what reached it.
type recordingForwarder struct {
	calls   atomic.Int64
	release chan struct{}
	waiting atomic.Int64
}

func (f *recordingForwarder) Resolve(ctx context.Context, req *dns.Msg) (*dns.Msg, error) {
	f.calls.Add(1)
	if f.release != nil {
		f.waiting.Add(1)
		defer f.waiting.Add(-1)
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	m := new(dns.Msg)
	m.SetReply(req)
	m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: req.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP("192.0.2.1")}}
	return m, nil
}

// Opcodes other than QUERY get NOTIMP for any name, in the zones or not,
// and never reach the forwarder.
func TestOtherOpcodesAreNotImplemented(t *testing.T) {
	f := &recordingForwarder{}
	s := startServer(t, fixture(t), Options{Forwarder: f})
	for _, network := range []string{"udp", "tcp"} {
		for _, op := range []int{dns.OpcodeNotify, dns.OpcodeUpdate, dns.OpcodeStatus, dns.OpcodeIQuery} {
			for _, name := range []string{"example.com.", kdns} {
				m := new(dns.Msg)
				m.SetQuestion(name, dns.TypeSOA)
				m.Opcode = op
				r, _, err := (&dns.Client{Net: network}).Exchange(m, s.addr)
				if err != nil {
					t.Fatalf("%s %s %s: %v", network, dns.OpcodeToString[op], name, err)
				}
				if r.Rcode != dns.RcodeNotImplemented || len(r.Answer) != 0 {
					t.Errorf("%s %s %s: %s, %d answers; want NOTIMP", network, dns.OpcodeToString[op], name, dns.RcodeToString[r.Rcode], len(r.Answer))
				}
			}
		}
	}
	if n := f.calls.Load(); n != 0 {
		t.Fatalf("%d non-QUERY queries reached the forwarder", n)
	}
}

// Names outside the zones are forwarded only for --allow-recursion
// sources; cluster names are answered to anyone.
func TestRecursionOnlyForAllowedSources(t *testing.T) {
	f := &recordingForwarder{}
	s := startServer(t, fixture(t), Options{Forwarder: f, AllowRecursion: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	for _, network := range []string{"udp", "tcp"} {
		if r := ask(t, s.addr, network, "127.0.0.1", "example.com.", dns.TypeA, 0); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Errorf("%s from an allowed source: %v", network, r)
		}
		if r := ask(t, s.addr, network, "127.0.0.9", "example.com.", dns.TypeA, 0); r.Rcode != dns.RcodeRefused {
			t.Errorf("%s from another source: %s, want REFUSED", network, dns.RcodeToString[r.Rcode])
		}
		if r := ask(t, s.addr, network, "127.0.0.9", kdns, dns.TypeA, 0); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Errorf("%s cluster name from another source: %v", network, r)
		}
	}
	if n := f.calls.Load(); n != 2 {
		t.Fatalf("the forwarder got %d queries, want the 2 from the allowed source", n)
	}
}

// With MaxConcurrentForwards queries waiting upstream, more names outside
// the zones get SERVFAIL at once, and cluster names are answered as usual.
func TestForwardsAreBounded(t *testing.T) {
	f := &recordingForwarder{release: make(chan struct{})}
	s := startServer(t, fixture(t), Options{Forwarder: f, MaxConcurrentForwards: 2, ForwardTimeout: time.Minute})
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ { // these two wait upstream
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := new(dns.Msg)
			m.SetQuestion("slow.example.", dns.TypeA)
			_, _, _ = (&dns.Client{Net: "tcp", Timeout: time.Minute}).Exchange(m, s.addr)
		}()
	}
	for f.waiting.Load() < 2 { // hang guard: the test's own timeout
		time.Sleep(time.Millisecond)
	}
	for _, network := range []string{"udp", "tcp"} {
		if r := ask(t, s.addr, network, "", "more.example.", dns.TypeA, 0); r.Rcode != dns.RcodeServerFailure {
			t.Errorf("%s over the bound: %s, want SERVFAIL", network, dns.RcodeToString[r.Rcode])
		}
		if r := ask(t, s.addr, network, "", kdns, dns.TypeA, 0); len(r.Answer) != 1 {
			t.Errorf("%s cluster name while forwarding is saturated: %v", network, r)
		}
	}
	close(f.release)
	wg.Wait()
	if r := ask(t, s.addr, "udp", "", "after.example.", dns.TypeA, 0); r.Rcode != dns.RcodeSuccess {
		t.Errorf("after the upstream answered: %s", dns.RcodeToString[r.Rcode])
	}
}

// Malformed messages get FORMERR over UDP and TCP, with their ID: a
// compression pointer into the header, two OPT records, bytes after the
// message.
func TestStrictParsing(t *testing.T) {
	s := startServer(t, fixture(t), Options{})
	valid := func(id uint16) []byte {
		m := new(dns.Msg)
		m.SetQuestion(kdns, dns.TypeA)
		m.Id = id
		m.SetEdns0(1232, false)
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	twoOPT := func() []byte {
		b := valid(2)
		opt := b[len(b)-11:]
		b = append(b, opt...)
		binary.BigEndian.PutUint16(b[10:], 2)
		return b
	}
	pointerIntoHeader := func() []byte {
		// One question whose name is a pointer to offset 4 (the counts).
		b := []byte{0, 3, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 4, 0, 1, 0, 1}
		return b
	}
	cases := map[string][]byte{
		"pointer into the header": pointerIntoHeader(),
		"two OPT records":         twoOPT(),
		"trailing bytes":          append(valid(4), 0xde, 0xad),
	}
	for name, pkt := range cases {
		for _, network := range []string{"udp", "tcp"} {
			r := rawExchange(t, s.addr, network, pkt)
			if r == nil || len(r) < headerLen || r[3]&0xF != dns.RcodeFormatError || binary.BigEndian.Uint16(r) != binary.BigEndian.Uint16(pkt) {
				t.Errorf("%s over %s: answer %v, want FORMERR with the query's ID", name, network, r)
			}
		}
	}
	// The valid query still works on both transports.
	for _, network := range []string{"udp", "tcp"} {
		if r := rawExchange(t, s.addr, network, valid(5)); r == nil || r[3]&0xF != dns.RcodeSuccess {
			t.Errorf("valid query over %s: %v", network, r)
		}
	}
}

// rawExchange sends pkt and returns the answer's bytes.
func rawExchange(t *testing.T, addr, network string, pkt []byte) []byte {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second)) // hang guard
	if network == "tcp" {
		pkt = append(binary.BigEndian.AppendUint16(nil, uint16(len(pkt))), pkt...)
	}
	if _, err := c.Write(pkt); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65536)
	if network == "tcp" {
		var l [2]byte
		if _, err := readFull(c, l[:]); err != nil {
			return nil
		}
		n, err := readFull(c, buf[:binary.BigEndian.Uint16(l[:])])
		if err != nil {
			return nil
		}
		return buf[:n]
	}
	n, err := c.Read(buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func TestValidateMessage(t *testing.T) {
	q := func() []byte {
		m := new(dns.Msg)
		m.SetQuestion("a.example.", dns.TypeA)
		b, _ := m.Pack()
		return b
	}
	cases := []struct {
		name string
		pkt  []byte
		ok   bool
	}{
		{"a plain query", q(), true},
		{"short", []byte{1, 2, 3}, false},
		{"question runs out", q()[:headerLen+3], false},
		{"pointer forward", []byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 20, 0, 1, 0, 1}, false},
		{"pointer to itself", []byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1}, false},
		{"reserved label type", []byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x40, 0, 1, 0, 1}, false},
		{"trailing byte", append(q(), 0), false},
	}
	for _, tc := range cases {
		if err := validateMessage(tc.pkt); (err == nil) != tc.ok {
			t.Errorf("%s: validateMessage = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
// the zones are dropped over UDP and get SERVFAIL at once over TCP, and
// cluster names are answered as usual.
func TestForwardsAreBounded(t *testing.T) {
	f := &recordingForwarder{release: make(chan struct{})}
	met := NewMetrics(nil)
	s := startServer(t, fixture(t), Options{Forwarder: f, MaxConcurrentForwards: 2, ForwardTimeout: time.Minute, Metrics: met})
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
	// UDP: the query over the bound is dropped; the cluster query sent
	// after it on the same socket is the first answer.
	c, err := net.Dial("udp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for id, name := range []string{"more.example.", kdns} {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		m.Id = uint16(id + 1)
		b, _ := m.Pack()
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second)) // hang guard
	buf := make([]byte, 1500)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	var r dns.Msg
	if err := r.Unpack(buf[:n]); err != nil || r.Id != 2 || len(r.Answer) != 1 {
		t.Errorf("udp: first answer %v (%v), want the cluster name's; the query over the bound dropped", &r, err)
	}
	if n := testutil.ToFloat64(met.forwardsDropped[dropLimit]); n != 1 {
		t.Errorf("%v queries dropped over the bound, want 1", n)
	}
	if r := ask(t, s.addr, "tcp", "", "more.example.", dns.TypeA, 0); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("tcp over the bound: %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	if r := ask(t, s.addr, "tcp", "", kdns, dns.TypeA, 0); len(r.Answer) != 1 {
		t.Errorf("tcp cluster name while forwarding is saturated: %v", r)
	}
	close(f.release)
	wg.Wait()
	// A forward's token is given back just after its answer is written,
	// so the clients may have their answers a moment before: until then a
	// UDP query would still be over the bound, and dropped.
	for deadline := time.Now().Add(10 * time.Second); len(s.h.forwards) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d forwarding tokens still held after the upstream answered", len(s.h.forwards))
		}
	}
	if r := ask(t, s.addr, "udp", "", "after.example.", dns.TypeA, 0); r.Rcode != dns.RcodeSuccess {
		t.Errorf("after the upstream answered: %s", dns.RcodeToString[r.Rcode])
	}
}

// floodForwarder holds queries for names under flood.example. until their
// context ends, as a dead upstream would, and answers others at once.
type floodForwarder struct{ waiting atomic.Int64 }

func (f *floodForwarder) Resolve(ctx context.Context, req *dns.Msg) (*dns.Msg, error) {
	if dns.IsSubDomain("flood.example.", req.Question[0].Name) {
		f.waiting.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return (&recordingForwarder{}).Resolve(ctx, req)
}

// One source's flood of names behind a dead upstream takes at most half the
// forwarding pool and its budget, and is dropped beyond, unanswered; another
// source's names are still forwarded and answered.
func TestSourceFloodLeavesOthersForwarding(t *testing.T) {
	f := &floodForwarder{}
	met := NewMetrics(nil)
	s := startServer(t, fixture(t), Options{Forwarder: f, MaxConcurrentForwards: 20, ForwardsPerSource: 1, ForwardBurstPerSource: 2,
		ForwardTimeout: time.Minute, Metrics: met})
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP("127.0.0.2")}, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(s.addr)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const flood = 200
	for i := 0; i < flood; i++ {
		m := new(dns.Msg)
		m.SetQuestion(fmt.Sprintf("r%d.flood.example.", i), dns.TypeA)
		b, _ := m.Pack()
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	// Every flood query is waiting upstream or dropped (hang guard: the
	// test's own timeout).
	for f.waiting.Load()+int64(testutil.ToFloat64(met.forwardsDropped[dropSource])+testutil.ToFloat64(met.forwardsDropped[dropLimit])) < flood {
		time.Sleep(time.Millisecond)
	}
	// Half the pool (10), plus at most the burst while it filled.
	if w := f.waiting.Load(); w < 10 || w > 12 {
		t.Errorf("%d flood queries waiting upstream, want 10 to 12 of the 20", w)
	}
	if n := testutil.ToFloat64(met.forwardsDropped[dropLimit]); n != 0 {
		t.Errorf("%v queries dropped at the limit: one source filled the pool", n)
	}
	for _, network := range []string{"udp", "tcp"} {
		if r := ask(t, s.addr, network, "127.0.0.3", "calm.example.", dns.TypeA, 0); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Errorf("%s: another source's name during the flood: %v", network, r)
		}
	}
	// The flooder itself got no answer.
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1500)); err == nil {
		t.Errorf("the flooder got a %d-byte answer", n)
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

package main

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// query packs a query for name and qtype, with an EDNS record when edns.
func query(t *testing.T, name string, qtype uint16, edns bool) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	if edns {
		m.SetEdns0(1232, false)
	}
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRespond(t *testing.T) {
	for _, c := range []struct {
		name    string
		qname   string
		qtype   uint16
		edns    bool
		answers int
	}{
		{"A gets the canned answer", "svc.ns.svc.cluster.local.", dns.TypeA, false, 1},
		{"EDNS is dropped", "svc.ns.svc.cluster.local.", dns.TypeA, true, 1},
		{"AAAA gets no answer", "svc.ns.svc.cluster.local.", dns.TypeAAAA, true, 0},
		{"the root", ".", dns.TypeA, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := query(t, c.qname, c.qtype, c.edns)
			b := make([]byte, bufSize)
			n := respond(b, copy(b, q))
			if n == 0 {
				t.Fatal("dropped")
			}
			var r dns.Msg
			if err := r.Unpack(b[:n]); err != nil {
				t.Fatalf("the response does not parse: %v", err)
			}
			var id dns.Msg
			_ = id.Unpack(q)
			if r.Id != id.Id || !r.Response || !r.Authoritative || r.Rcode != dns.RcodeSuccess || !r.RecursionDesired {
				t.Errorf("header %+v, want the query's id, QR, AA, RD and NOERROR", r.MsgHdr)
			}
			if len(r.Question) != 1 || r.Question[0].Name != c.qname || r.Question[0].Qtype != c.qtype {
				t.Errorf("question %v, want %s %s", r.Question, c.qname, dns.TypeToString[c.qtype])
			}
			if len(r.Answer) != c.answers || len(r.Ns) != 0 || len(r.Extra) != 0 {
				t.Fatalf("sections %d/%d/%d, want %d answers and nothing else", len(r.Answer), len(r.Ns), len(r.Extra), c.answers)
			}
			if c.answers == 1 {
				a, ok := r.Answer[0].(*dns.A)
				if !ok || a.Hdr.Name != c.qname || a.Hdr.Ttl != 5 || !a.A.Equal(net.IPv4(10, 0, 0, 1)) {
					t.Errorf("answer %v, want %s 5 IN A 10.0.0.1", r.Answer[0], c.qname)
				}
			}
		})
	}
}

func TestRespondDrops(t *testing.T) {
	good := query(t, "a.example.", dns.TypeA, false)
	response := append([]byte(nil), good...)
	response[2] |= 0x80
	noQuestion := append([]byte(nil), good[:12]...)
	noQuestion[5] = 0
	for name, q := range map[string][]byte{
		"empty":          {},
		"a header only":  good[:12],
		"a cut question": good[:len(good)-2],
		"a cut name":     good[:15],
		"a response":     response,
		"no question":    append(noQuestion, 0, 0, 1, 0, 1),
		"a pointer name": append(append([]byte(nil), good[:12]...), 0xc0, 12, 0, 1, 0, 1),
		"a label past n": append(append([]byte(nil), good[:12]...), 40, 'a', 'b'),
	} {
		b := make([]byte, bufSize)
		if n := respond(b, copy(b, q)); n != 0 {
			t.Errorf("%s: answered %d bytes, want a drop", name, n)
		}
	}
	// No room for the answer: the response goes without it.
	b := append([]byte(nil), good...)
	if n := respond(b, len(b)); n != len(good) || b[7] != 0 {
		t.Errorf("a full buffer: %d bytes, ANCOUNT %d; want %d bytes and no answer", n, b[7], len(good))
	}
}

// TestServe sends real queries to both serving loops over UDP.
func TestServe(t *testing.T) {
	for _, batch := range []int{1, 8} {
		conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			if batch == 1 {
				done <- serveOne(conn)
			} else {
				done <- serveBatch(conn, batch)
			}
		}()
		c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
		for i := range 20 {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn("q"+string(rune('a'+i))+".example"), dns.TypeA)
			r, _, err := c.Exchange(m, conn.LocalAddr().String())
			if err != nil {
				t.Fatalf("batch %d: %v", batch, err)
			}
			if r.Id != m.Id || len(r.Answer) != 1 {
				t.Fatalf("batch %d: %v", batch, r)
			}
		}
		conn.Close()
		if err := <-done; err == nil {
			t.Errorf("batch %d: serving a closed socket returned nil", batch)
		}
	}
}

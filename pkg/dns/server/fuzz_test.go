package server

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

// FuzzPacket is the packet→answer path: bytes are unpacked as the miekg/dns
// server does (a packet it cannot read gets FORMERR or is dropped there),
// then answered. The answer must be a well-formed DNS message with the
// query's ID, within the UDP size, and nothing may panic.
func FuzzPacket(f *testing.F) {
	b := fixture(f)
	h, err := New(b, Options{Zones: []string{"cluster.local", "in-addr.arpa", "ip6.arpa"}, TTL: 5, Pods: PodsVerified, Isolation: true, NSAddrs: ips("127.0.0.1", "::1")})
	if err != nil {
		f.Fatal(err)
	}
	h.MarkSynced()
	for _, q := range []struct {
		name  string
		qtype uint16
		edns  uint16
	}{
		{kdns, dns.TypeA, 0}, {kdns, dns.TypeSRV, 1232}, {"db.default.svc.cluster.local.", dns.TypeSRV, 0},
		{"_mysql._tcp.db.default.svc.cluster.local.", dns.TypeSRV, 4096}, {"api.web.alpha.svc.cluster.local.", dns.TypeA, 0},
		{"10.0.0.10.in-addr.arpa.", dns.TypePTR, 0}, {"cluster.local.", dns.TypeNS, 0}, {"cluster.local.", dns.TypeAXFR, 0},
		{"x.cluster.local.", dns.TypeTXT, 0}, {"1-2-3-4.default.pod.cluster.local.", dns.TypeA, 0}, {"example.org.", dns.TypeA, 0},
		{"ext.default.svc.cluster.local.", dns.TypeA, 512},
	} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		if q.edns > 0 {
			m.SetEdns0(q.edns, true)
		}
		p, _ := m.Pack()
		f.Add(p, uint8(0), false)
		f.Add(p, uint8(11), true)
	}
	// The ordinary UDP path (slowUDP) writes to a real socket; its answers
	// go to a closed port and are lost, which is fine here.
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { pc.Close() })
	sink := netip.MustParseAddrPort("127.0.0.1:9")
	// Malformed messages that must get FORMERR (TestStrictParsing).
	f.Add([]byte{0, 3, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 4, 0, 1, 0, 1}, uint8(0), false)
	two := new(dns.Msg)
	two.SetQuestion(kdns, dns.TypeA)
	two.SetEdns0(1232, false)
	two.Extra = append(two.Extra, two.Extra[0])
	if p, err := two.Pack(); err == nil {
		f.Add(p, uint8(0), false)
		f.Add(append(p[:len(p)-11:len(p)-11], 0xde, 0xad), uint8(0), false)
	}
	f.Fuzz(func(t *testing.T, packet []byte, src uint8, tcp bool) {
		h.slowUDP(pc, packet, sink, false)
		// The quick answers of the overload and FORMERR paths parse and
		// carry the query's ID.
		if out := quickReply(packet, dns.RcodeServerFailure); out != nil {
			var resp dns.Msg
			if err := resp.Unpack(out); err != nil || resp.Id != binary.BigEndian.Uint16(packet) || !resp.Response || resp.Rcode != dns.RcodeServerFailure {
				t.Fatalf("quick answer %x: %v %v", out, err, resp)
			}
		}
		_ = validateMessage(packet)
		// The UDP fast path reads the raw packet itself.
		st := h.pool.Get().(*state)
		var q query
		if parseQuery(packet, st, &q) {
			var rep reply
			h.respondQuery(st, &q, netip.AddrFrom4([4]byte{127, 0, 0, src}), false, &rep)
			if out := rep.out; out != nil {
				var resp dns.Msg
				if err := resp.Unpack(out); err != nil {
					t.Fatalf("fast-path answer does not parse: %v", err)
				}
				limit := udpLimit(q.edns, q.udpSize)
				if len(out) > limit || len(out) > defaultEDNS || resp.Id != q.id {
					t.Fatalf("fast path: %d bytes for limit %d, id %d", len(out), limit, resp.Id)
				}
			}
		}
		h.pool.Put(st)
		req := new(dns.Msg)
		if err := req.Unpack(packet); err != nil || len(req.Question) != 1 {
			return // the miekg/dns server answers FORMERR or drops it
		}
		out := h.Respond(req, netip.AddrFrom4([4]byte{127, 0, 0, src}), tcp)
		if out == nil {
			return // forwarded
		}
		var resp dns.Msg
		if err := resp.Unpack(out); err != nil {
			t.Fatalf("answer does not parse: %v\nquery %v", err, req)
		}
		if resp.Id != req.Id || !resp.Response {
			t.Fatalf("id %d response %v", resp.Id, resp.Response)
		}
		limit := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil && int(opt.UDPSize()) > limit {
			limit = min(int(opt.UDPSize()), defaultEDNS)
		}
		if !tcp && len(out) > limit {
			t.Fatalf("UDP answer of %d bytes for a limit of %d", len(out), limit)
		}
	})
}

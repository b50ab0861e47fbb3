package server

import (
	"net"
	"testing"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/forward"
)

// startUpstream runs a real DNS server on loopback that knows example.com.
// and nothing else.
func startUpstream(t *testing.T) string {
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		switch q := r.Question[0]; {
		case dns.CanonicalName(q.Name) == "example.com." && q.Qtype == dns.TypeA:
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP("192.0.2.80")}}
		case dns.CanonicalName(q.Name) == "1.0.0.192.in-addr.arpa." && q.Qtype == dns.TypePTR:
			m.Answer = []dns.RR{&dns.PTR{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 60}, Ptr: "upstream.example."}}
		default:
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dns.Server{PacketConn: pc, Handler: h}
	go func() { _ = s.ActivateAndServe() }()
	t.Cleanup(func() { _ = s.Shutdown() })
	return pc.LocalAddr().String()
}

func TestForwarding(t *testing.T) {
	f, err := forward.New(forward.Options{Upstreams: []string{startUpstream(t)}})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, fixture(t), Options{Forwarder: f})
	for _, network := range []string{"udp", "tcp"} {
		// Names outside the zones go upstream, keeping the query's case.
		r := ask(t, s.addr, network, "", "Example.COM.", dns.TypeA, 0)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.80" || r.Question[0].Name != "Example.COM." {
			t.Fatalf("%s forwarded: %v", network, r)
		}
		if r := ask(t, s.addr, network, "", "nope.example.", dns.TypeA, 0); r.Rcode != dns.RcodeNameError {
			t.Fatalf("%s forwarded miss: %v", network, r)
		}
		// An ExternalName's target is resolved upstream after the CNAME.
		r = ask(t, s.addr, network, "", "ext.default.svc.cluster.local.", dns.TypeA, 0)
		if len(r.Answer) != 2 || r.Answer[0].(*dns.CNAME).Target != "example.com." || r.Answer[1].(*dns.A).A.String() != "192.0.2.80" {
			t.Fatalf("%s ExternalName: %v", network, r)
		}
		// Reverse names of unknown addresses fall through to upstream;
		// known ones are answered here.
		r = ask(t, s.addr, network, "", "1.0.0.192.in-addr.arpa.", dns.TypePTR, 0)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.PTR).Ptr != "upstream.example." {
			t.Fatalf("%s reverse fallthrough: %v", network, r)
		}
		r = ask(t, s.addr, network, "", "10.0.0.10.in-addr.arpa.", dns.TypePTR, 0)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.PTR).Ptr != kdns {
			t.Fatalf("%s reverse hit: %v", network, r)
		}
		// Zone transfers are refused for forwarded names too.
		if r := ask(t, s.addr, "tcp", "", "example.com.", dns.TypeAXFR, 0); r.Rcode != dns.RcodeRefused {
			t.Fatalf("AXFR forwarded: %v", r)
		}
	}
}

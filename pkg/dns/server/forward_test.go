package server

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// startUpstream runs a real DNS server on loopback that knows example.com.
// and 1.0.0.192.in-addr.arpa. and nothing else.
func startUpstream(t *testing.T) string {
	return serveUpstream(t, "example.com. 60 IN A 192.0.2.80", "1.0.0.192.in-addr.arpa. 60 IN PTR upstream.example.").addr
}

// upstream is a real DNS server on loopback, over UDP and TCP on one port.
type upstream struct {
	addr string
	// queries counts the questions that reached it.
	queries atomic.Int64
}

// serveUpstream runs an upstream that answers from rrs: the records of the
// asked name and type, NODATA for a name it has records of another type
// for, NXDOMAIN for others. Answers for names whose first label is
// "truncated" have TC set, over TCP too, as a broken upstream's would.
func serveUpstream(t *testing.T, rrs ...string) *upstream {
	t.Helper()
	var zone []dns.RR
	for _, s := range rrs {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		zone = append(zone, rr)
	}
	u := &upstream{}
	u.addr = runUpstream(t, dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		u.queries.Add(1)
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		m.Rcode = dns.RcodeNameError
		for _, rr := range zone {
			if !strings.EqualFold(rr.Header().Name, q.Name) {
				continue
			}
			m.Rcode = dns.RcodeSuccess
			if rr.Header().Rrtype == q.Qtype {
				m.Answer = append(m.Answer, dns.Copy(rr))
			}
		}
		m.Truncated = strings.HasPrefix(dns.CanonicalName(q.Name), "truncated.")
		_ = w.WriteMsg(m)
	}))
	return u
}

// runUpstream serves h on a loopback UDP and TCP port until the test ends
// and returns the address.
func runUpstream(t *testing.T, h dns.Handler) string {
	t.Helper()
	l, err := Listen("127.0.0.1:0", 1)
	if err != nil {
		t.Fatal(err)
	}
	servers := []*dns.Server{{PacketConn: l.udp[0], Handler: h}, {Listener: l.tcp, Handler: h}}
	for _, s := range servers {
		started := make(chan struct{})
		s.NotifyStartedFunc = func() { close(started) }
		go func() { _ = s.ActivateAndServe() }()
		<-started
	}
	t.Cleanup(func() {
		for _, s := range servers {
			_ = s.Shutdown()
		}
	})
	return l.Addr()
}

func TestForwarding(t *testing.T) {
	f := newForwarder(t, startUpstream(t), true, 0)
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

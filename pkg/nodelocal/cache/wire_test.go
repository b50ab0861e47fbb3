package cache

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/upstream"
	"github.com/tpkit-dev/tpkit/testbed/upstreamtest"
)

// TestFastPathMatchesBuiltAnswer compares the template hit path with the
// answer built record by record, for several shapes of entries and queries.
func TestFastPathMatchesBuiltAnswer(t *testing.T) {
	clk := upstreamtest.NewClock()
	h, err := NewHandler(HandlerConfig{Cache: upstream.DefaultConfig(), Now: clk.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		qtype uint16
		resp  *dns.Msg
	}{
		{"a.default.svc.cluster.local.", dns.TypeA, upstreamtest.Msg(0, []dns.RR{upstreamtest.RR("a.default.svc.cluster.local. 30 IN A 10.0.0.1"), upstreamtest.RR("a.default.svc.cluster.local. 30 IN A 10.0.0.2")}, nil)},
		{"nx.cluster.local.", dns.TypeA, upstreamtest.Msg(dns.RcodeNameError, nil, []dns.RR{upstreamtest.RR(fmt.Sprintf(upstreamtest.SOA, 60))})},
		{"nodata.cluster.local.", dns.TypeAAAA, upstreamtest.Msg(0, nil, []dns.RR{upstreamtest.RR(fmt.Sprintf(upstreamtest.SOA, 60))})},
		{"_dns._udp.kube-dns.kube-system.svc.cluster.local.", dns.TypeSRV, func() *dns.Msg {
			m := upstreamtest.Msg(0, []dns.RR{upstreamtest.RR("_dns._udp.kube-dns.kube-system.svc.cluster.local. 30 IN SRV 0 100 53 kube-dns.kube-system.svc.cluster.local.")}, nil)
			m.Extra = []dns.RR{upstreamtest.RR("kube-dns.kube-system.svc.cluster.local. 30 IN A 10.0.0.10"), &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}}
			return m
		}()},
		{"weird\\.name.cluster.local.", dns.TypeTXT, upstreamtest.Msg(0, []dns.RR{upstreamtest.RR(`weird\.name.cluster.local. 30 IN TXT "a b"`)}, nil)},
	}
	for _, tc := range cases {
		for _, do := range []bool{false, true} {
			q := dns.Question{Name: tc.name, Qtype: tc.qtype, Qclass: dns.ClassINET}
			e, kind := h.Store().Set(q, do, tc.resp)
			if kind == upstream.Uncacheable {
				t.Fatalf("%s: not cached with templates (%v)", tc.name, kind)
			}
			for _, edns := range []bool{false, true} {
				if do && !edns {
					continue
				}
				req := new(dns.Msg)
				req.SetQuestion(strings.ToUpper(tc.name[:3])+tc.name[3:], tc.qtype)
				req.Id = 4242
				req.CheckingDisabled = do
				if edns {
					req.SetEdns0(4096, do)
				}
				fast := &recorder{remote: &net.UDPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 1}}
				if !h.writeFast(fast, req, e, 17, true) {
					t.Fatalf("%s edns=%v: fast path declined", tc.name, edns)
				}
				slow := &recorder{remote: fast.remote}
				h.write(slow, req, e, 17)
				a, b := fast.msgs[0], slow.msgs[0]
				b.Compress = false
				// Owner names may follow the question's spelling through
				// compression: names compare case-insensitively.
				if strings.ToLower(a.String()) != strings.ToLower(b.String()) {
					t.Errorf("%s edns=%v do=%v:\nfast:\n%s\nslow:\n%s", tc.name, edns, do, a, b)
				}
				if a.Id != 4242 || a.Question[0].Name != req.Question[0].Name || !a.RecursionDesired || !a.RecursionAvailable {
					t.Errorf("%s: header or question not patched: %v", tc.name, a)
				}
			}
		}
	}
}

func TestFastPathDeclinesWhatDoesNotFit(t *testing.T) {
	h, err := NewHandler(HandlerConfig{Cache: upstream.DefaultConfig()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var answers []dns.RR
	for i := 0; i < 60; i++ {
		answers = append(answers, upstreamtest.RR(fmt.Sprintf("big.cluster.local. 30 IN A 10.3.0.%d", i+1)))
	}
	q := dns.Question{Name: "big.cluster.local.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	e, _ := h.Store().Set(q, false, upstreamtest.Msg(0, answers, nil))
	req := new(dns.Msg)
	req.SetQuestion(q.Name, dns.TypeA)
	w := &recorder{remote: &net.UDPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 1}}
	if h.writeFast(w, req, e, 5, true) {
		t.Errorf("a 60-record answer went out over UDP without EDNS")
	}
	tw := &recorder{remote: &net.TCPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 1}}
	if !h.writeFast(tw, req, e, 5, false) || len(tw.msgs[0].Answer) != 60 {
		t.Errorf("TCP fast path failed")
	}
}

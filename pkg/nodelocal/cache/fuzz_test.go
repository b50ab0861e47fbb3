package cache

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/upstream"
	"github.com/tpkit-dev/tpkit/testbed/upstreamtest"
)

// recorder is a dns.ResponseWriter that keeps what is written.
type recorder struct {
	remote net.Addr
	msgs   []*dns.Msg
}

func (r *recorder) LocalAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(169, 254, 20, 10), Port: 53}
}
func (r *recorder) RemoteAddr() net.Addr      { return r.remote }
func (r *recorder) WriteMsg(m *dns.Msg) error { r.msgs = append(r.msgs, m); return nil }
func (r *recorder) Write(b []byte) (int, error) {
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil {
		return 0, err
	}
	r.msgs = append(r.msgs, m)
	return len(b), nil
}
func (r *recorder) Close() error        { return nil }
func (r *recorder) TsigStatus() error   { return nil }
func (r *recorder) TsigTimersOnly(bool) {}
func (r *recorder) Hijack()             {}

// FuzzServeDNS feeds arbitrary well-formed messages to the handler: it must
// never panic, and whatever it answers must be packable and carry the ID.
func FuzzServeDNS(f *testing.F) {
	seed := func(name string, qtype, qclass uint16, edns bool) {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		m.Question[0].Qclass = qclass
		if edns {
			m.SetEdns0(4096, true)
		}
		b, _ := m.Pack()
		f.Add(b)
	}
	seed("a.cluster.local.", dns.TypeA, dns.ClassINET, false)
	seed("id.server.", dns.TypeTXT, dns.ClassCHAOS, true)
	seed(".", dns.TypeANY, dns.ClassANY, true)
	h, err := NewHandler(HandlerConfig{
		Cache:           upstream.DefaultConfig(),
		Routes:          []upstream.Route{{Zone: ".", Upstream: upstream.NewServersUpstream(nil, time.Millisecond), Label: "host"}},
		UpstreamTimeout: time.Millisecond,
	}, nil)
	if err != nil {
		f.Fatal(err)
	}
	// Cached entries, so fuzzed queries reach the template hit path too.
	for _, do := range []bool{false, true} {
		q := dns.Question{Name: "a.cluster.local.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
		h.Store().Set(q, do, upstreamtest.Msg(0, []dns.RR{upstreamtest.RR("a.cluster.local. 30 IN A 10.0.0.1")}, nil))
		q = dns.Question{Name: "nx.cluster.local.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
		h.Store().Set(q, do, upstreamtest.Msg(dns.RcodeNameError, nil, []dns.RR{upstreamtest.RR(fmt.Sprintf(upstreamtest.SOA, 5))}))
	}
	seed("A.cluster.LOCAL.", dns.TypeA, dns.ClassINET, true)
	seed("nx.cluster.local.", dns.TypeA, dns.ClassINET, false)
	f.Fuzz(func(t *testing.T, b []byte) {
		req := new(dns.Msg)
		if err := req.Unpack(b); err != nil {
			return
		}
		for _, remote := range []net.Addr{&net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5353}, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5353}} {
			w := &recorder{remote: remote}
			h.ServeDNS(w, req)
			for _, m := range w.msgs {
				if m.Id != req.Id || !m.Response {
					t.Fatalf("answer id %d response=%v for query %d", m.Id, m.Response, req.Id)
				}
				if _, err := m.Pack(); err != nil {
					t.Fatalf("answer does not pack: %v", err)
				}
			}
		}
	})
}

func TestParseResolvConf(t *testing.T) {
	skip := []netip.Addr{netip.MustParseAddr("169.254.20.10"), netip.MustParseAddr("10.0.0.10")}
	got, err := upstream.ParseResolvConf(strings.NewReader(
		"# host\nnameserver 10.0.0.10\nnameserver 192.0.2.53\nnameserver 2001:db8::53\nnameserver 169.254.20.10\nsearch example.com\noptions ndots:1\n"), skip)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "192.0.2.53:53,[2001:db8::53]:53" {
		t.Errorf("servers = %v", got)
	}
	if got, err := upstream.ParseResolvConf(strings.NewReader(""), nil); err != nil || len(got) != 0 {
		t.Errorf("empty: %v %v", got, err)
	}
}

func FuzzParseResolvConf(f *testing.F) {
	f.Add("nameserver 10.0.0.1\nsearch a b\noptions ndots:5 timeout:1\n")
	f.Add("nameserver fe80::1%eth0\n")
	f.Fuzz(func(t *testing.T, s string) {
		servers, err := upstream.ParseResolvConf(strings.NewReader(s), []netip.Addr{netip.MustParseAddr("169.254.20.10")})
		if err != nil {
			return
		}
		for _, sv := range servers {
			host, _, err := net.SplitHostPort(sv)
			if err != nil {
				t.Fatalf("%q is not host:port", sv)
			}
			if host == "169.254.20.10" {
				t.Fatalf("own IP kept as upstream")
			}
		}
	})
}

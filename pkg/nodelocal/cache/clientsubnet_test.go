package cache

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/upstream"
)

// ecsUpstream answers A queries with the address the query's ECS option
// names (the node's own, 10.9.9.9, without one), and scopes the answer as
// partition-dns would: /32 for names under "own." (the answer depends on
// who asks), /0 for the rest. It records the ECS option of each query.
type ecsUpstream struct {
	mu   sync.Mutex
	seen []string // "name ecs" per exchange; ecs "-" when absent
}

func (u *ecsUpstream) String() string { return "ecs-test" }

func (u *ecsUpstream) Exchange(_ context.Context, m *dns.Msg) (*dns.Msg, error) {
	q := m.Question[0]
	who, got := "10.9.9.9", "-"
	var sub *dns.EDNS0_SUBNET
	if opt := m.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if s, ok := o.(*dns.EDNS0_SUBNET); ok {
				sub = s
				who = s.Address.String()
				got = who + "/" + itoa(int(s.SourceNetmask))
			}
		}
	}
	u.mu.Lock()
	u.seen = append(u.seen, strings.ToLower(q.Name)+" "+got)
	u.mu.Unlock()
	r := new(dns.Msg)
	r.SetReply(m)
	r.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.ParseIP(who)}}
	r.SetEdns0(1232, false)
	if sub != nil {
		scope := uint8(0)
		if dns.IsSubDomain("own.", q.Name) {
			scope = sub.SourceNetmask
		}
		echo := *sub
		echo.SourceScope = scope
		r.IsEdns0().Option = []dns.EDNS0{&echo}
	}
	return r, nil
}

func (u *ecsUpstream) exchanges() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestClientSubnetRules: the node cache sends each pod's address to the
// cluster route as ECS (replacing the pod's own), never to the host route;
// an answer scoped /32 is cached for its pod alone, one scoped /0 once for
// all; with ClientSubnet off, nothing changes from before.
func TestClientSubnetRules(t *testing.T) {
	for _, on := range []bool{true, false} {
		cluster, host := &ecsUpstream{}, &ecsUpstream{}
		h, err := NewHandler(HandlerConfig{Cache: upstream.DefaultConfig(), Routes: []upstream.Route{
			{Zone: "own.", Upstream: cluster, Label: "cluster", ClientSubnet: on},
			{Zone: "shared.", Upstream: cluster, Label: "cluster", ClientSubnet: on},
			{Zone: ".", Upstream: host, Label: "host"},
		}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ask := func(from, name, podECS string) string {
			t.Helper()
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			m.SetEdns0(1232, false)
			if podECS != "" {
				m.IsEdns0().Option = append(m.IsEdns0().Option, upstream.ClientSubnet(netip.MustParseAddr(podECS)))
			}
			w := &recorder{remote: &net.UDPAddr{IP: net.ParseIP(from), Port: 40000}}
			h.ServeDNS(w, m)
			if len(w.msgs) != 1 || len(w.msgs[0].Answer) != 1 {
				t.Fatalf("%s from %s: %v", name, from, w.msgs)
			}
			for _, rr := range w.msgs[0].Extra {
				if opt, ok := rr.(*dns.OPT); ok && len(opt.Option) > 0 {
					t.Errorf("%s from %s: the pod got EDNS options %v", name, from, opt.Option)
				}
			}
			return w.msgs[0].Answer[0].(*dns.A).A.String()
		}
		want := func(a, b string) string {
			if on {
				return a
			}
			return b
		}
		cases := []struct {
			from, name, podECS string
			answer             string
		}{
			{"10.0.0.1", "a.own.", "", want("10.0.0.1", "10.9.9.9")},
			{"10.0.0.2", "a.own.", "", want("10.0.0.2", "10.9.9.9")}, // /32: not the first pod's answer
			{"10.0.0.1", "a.own.", "", want("10.0.0.1", "10.9.9.9")}, // cached for pod 1
			{"10.0.0.3", "a.own.", "10.0.0.1", want("10.0.0.3", "10.9.9.9")},
			{"10.0.0.1", "b.shared.", "", want("10.0.0.1", "10.9.9.9")},
			{"10.0.0.2", "b.shared.", "", want("10.0.0.1", "10.9.9.9")}, // /0: shared
			{"10.0.0.1", "example.com.", "", "10.9.9.9"},
			{"10.0.0.2", "example.com.", "10.0.0.7", "10.9.9.9"},
		}
		for _, c := range cases {
			if got := ask(c.from, c.name, c.podECS); got != c.answer {
				t.Errorf("client subnet %v: %s from %s (ECS %q): %s, want %s", on, c.name, c.from, c.podECS, got, c.answer)
			}
		}
		wantCluster := []string{"a.own. 10.0.0.1/32", "a.own. 10.0.0.2/32", "a.own. 10.0.0.3/32", "b.shared. 10.0.0.1/32"}
		if !on {
			wantCluster = []string{"a.own. -", "b.shared. -"}
		}
		if got := cluster.exchanges(); strings.Join(got, ",") != strings.Join(wantCluster, ",") {
			t.Errorf("client subnet %v: the cluster upstream saw %v, want %v", on, got, wantCluster)
		}
		if got := host.exchanges(); strings.Join(got, ",") != "example.com. -" {
			t.Errorf("client subnet %v: the host upstream saw %v, want one query without ECS", on, got)
		}
		if n := h.Store().Len(upstream.Success); n != want2(on, 5, 3) {
			t.Errorf("client subnet %v: %d entries, want %d", on, n, want2(on, 5, 3))
		}
	}
}

func want2(on bool, a, b int) int {
	if on {
		return a
	}
	return b
}

package upstream

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/testbed/upstreamtest"
)

func TestClassify(t *testing.T) {
	trunc := upstreamtest.Msg(dns.RcodeSuccess, []dns.RR{upstreamtest.RR("a.cluster.local. 30 IN A 10.0.0.1")}, nil)
	trunc.Truncated = true
	for _, tc := range []struct {
		name string
		m    *dns.Msg
		kind Kind
		ttl  uint32
	}{
		{"success", upstreamtest.Msg(dns.RcodeSuccess, []dns.RR{upstreamtest.RR("a. 300 IN A 10.0.0.1"), upstreamtest.RR("a. 20 IN A 10.0.0.2")}, nil), Success, 20},
		{"nxdomain uses SOA minimum", upstreamtest.Msg(dns.RcodeNameError, nil, []dns.RR{upstreamtest.RR(fmt.Sprintf(upstreamtest.SOA, 3))}), Denial, 3},
		{"nodata", upstreamtest.Msg(dns.RcodeSuccess, nil, []dns.RR{upstreamtest.RR(fmt.Sprintf(upstreamtest.SOA, 120))}), Denial, 60},
		{"nxdomain without SOA", upstreamtest.Msg(dns.RcodeNameError, nil, nil), Denial, 1<<31 - 1},
		{"servfail", upstreamtest.Msg(dns.RcodeServerFailure, nil, nil), Uncacheable, 0},
		{"refused", upstreamtest.Msg(dns.RcodeRefused, nil, nil), Uncacheable, 0},
		{"truncated", trunc, Uncacheable, 0},
		{"nil", nil, Uncacheable, 0},
	} {
		kind, ttl := Classify(tc.m)
		if kind != tc.kind || ttl != tc.ttl {
			t.Errorf("%s: Classify = %v %d, want %v %d", tc.name, kind, ttl, tc.kind, tc.ttl)
		}
	}
}

func TestStoreTTLCapsAndStale(t *testing.T) {
	clk := upstreamtest.NewClock()
	cfg := DefaultConfig()
	cfg.ServeStale = time.Minute
	s := NewStore(cfg, clk.Now)
	qa := dns.Question{Name: "A.Cluster.Local.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	qn := dns.Question{Name: "nx.cluster.local.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	if _, k := s.Set(qa, false, upstreamtest.Msg(0, []dns.RR{upstreamtest.RR("a.cluster.local. 300 IN A 10.0.0.1")}, nil)); k != Success {
		t.Fatalf("kind %v", k)
	}
	if _, k := s.Set(qn, false, upstreamtest.Msg(dns.RcodeNameError, nil, []dns.RR{upstreamtest.RR(fmt.Sprintf(upstreamtest.SOA, 600))})); k != Denial {
		t.Fatalf("kind %v", k)
	}
	lower := dns.Question{Name: "a.cluster.local.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	for _, tc := range []struct {
		after  time.Duration
		q      dns.Question
		do     bool
		want   State
		remain time.Duration
	}{
		{0, lower, false, Fresh, 30 * time.Second}, // 300 s capped to 30 s, case-insensitive
		{0, lower, true, Miss, 0},                  // the DO bit is part of the key
		{0, dns.Question{Name: "a.cluster.local.", Qtype: dns.TypeAAAA, Qclass: dns.ClassINET}, false, Miss, 0},
		{0, qn, false, Fresh, 5 * time.Second}, // 60 s SOA capped to 5 s
		{5 * time.Second, qn, false, Stale, 0},
		{29 * time.Second, lower, false, Fresh, time.Second},
		{30 * time.Second, lower, false, Stale, 0},
		{90*time.Second - time.Nanosecond, lower, false, Stale, 0},
		{90 * time.Second, lower, false, Miss, 0},
	} {
		at := clk.Now().Add(tc.after)
		s.now = func() time.Time { return at }
		e, st := s.Get(tc.q, tc.do)
		if st != tc.want {
			t.Errorf("after %v %v do=%v: state %v, want %v", tc.after, tc.q, tc.do, st, tc.want)
			continue
		}
		if st == Fresh && e.Remaining(at) != tc.remain {
			t.Errorf("after %v %v: remaining %v, want %v", tc.after, tc.q, e.Remaining(at), tc.remain)
		}
	}
	// TTL 0 is not cached; a new answer replaces an old one of another kind.
	s.now = clk.Now
	if _, k := s.Set(qa, false, upstreamtest.Msg(0, []dns.RR{upstreamtest.RR("a.cluster.local. 0 IN A 10.0.0.1")}, nil)); k != Uncacheable {
		t.Errorf("ttl 0 cached as %v", k)
	}
	s.Set(qa, false, upstreamtest.Msg(dns.RcodeNameError, nil, nil))
	if s.Len(Success) != 0 || s.Len(Denial) != 2 {
		t.Errorf("after replacement: %d success, %d denial", s.Len(Success), s.Len(Denial))
	}
}

func TestStoreCapacities(t *testing.T) {
	for _, tc := range []struct{ success, denial int }{{3, 2}, {10, 1}, {300, 500}} {
		cfg := DefaultConfig()
		cfg.SuccessCapacity, cfg.DenialCapacity = tc.success, tc.denial
		s := NewStore(cfg, nil)
		for i := 0; i < 2000; i++ {
			q := dns.Question{Name: fmt.Sprintf("n%d.cluster.local.", i), Qtype: dns.TypeA, Qclass: dns.ClassINET}
			s.Set(q, false, upstreamtest.Msg(0, []dns.RR{upstreamtest.RR(q.Name + " 30 IN A 10.0.0.1")}, nil))
			q.Qtype = dns.TypeAAAA
			s.Set(q, false, upstreamtest.Msg(dns.RcodeNameError, nil, nil))
		}
		if s.Len(Success) > tc.success || s.Len(Denial) > tc.denial {
			t.Errorf("caps %v: holds %d success, %d denial", tc, s.Len(Success), s.Len(Denial))
		}
		// Small caches are exact; sharded ones lose at most rounding.
		if s.Len(Success) < tc.success*9/10 || s.Len(Denial) < tc.denial*9/10 {
			t.Errorf("caps %v: holds only %d success, %d denial", tc, s.Len(Success), s.Len(Denial))
		}
		if s.Evictions(Success) != int64(2000-s.Len(Success)) {
			t.Errorf("caps %v: %d evictions for %d entries", tc, s.Evictions(Success), s.Len(Success))
		}
	}
}

func BenchmarkStoreGet(b *testing.B) {
	s := NewStore(DefaultConfig(), nil)
	q := dns.Question{Name: "kubernetes.default.svc.cluster.local.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	s.Set(q, false, upstreamtest.Msg(0, []dns.RR{upstreamtest.RR(q.Name + " 30 IN A 10.0.0.1")}, nil))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, st := s.Get(q, false); st != Fresh {
				b.Fatal("miss")
			}
		}
	})
}

package watch

import (
	"context"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tpkit-dev/tpkit/pkg/nodelocal/rules"
	"github.com/tpkit-dev/tpkit/testbed/netns"
)

func TestSwitch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  bool
		probes string // s = success, f = failure
		want   string // state after each probe: L local, E endpoints
	}{
		{"two failures do not flip", true, "ffsff", "LLLLL"},
		{"three failures flip", true, "fff", "LLE"},
		{"success resets the failure run", true, "ffsfff", "LLLLLE"},
		{"three successes flip back", false, "sss", "EEL"},
		{"failure resets the success run", false, "ssfsss", "EEEEEL"},
		{"flapping", true, "fffsssfff", "LLEEELLLE"},
	} {
		s := Switch{Local: tc.start, FailureThreshold: 3, SuccessThreshold: 3}
		var got strings.Builder
		flips := 0
		for _, p := range tc.probes {
			if s.Observe(p == 's') {
				flips++
			}
			if s.Local {
				got.WriteByte('L')
			} else {
				got.WriteByte('E')
			}
		}
		if got.String() != tc.want {
			t.Errorf("%s: states %s, want %s", tc.name, got.String(), tc.want)
		}
	}
	s := Switch{Local: true, FailureThreshold: 0, SuccessThreshold: 0}
	if !s.Observe(false) || s.Local {
		t.Errorf("threshold 0 acts as 1")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	good := Defaults()
	good.Target = "169.254.20.10:53"
	for name, mut := range map[string]func(*Config){
		"no target":      func(c *Config) { c.Target = "" },
		"zero interval":  func(c *Config) { c.Interval = 0 },
		"zero threshold": func(c *Config) { c.FailureThreshold = 0 },
		"bad probe name": func(c *Config) { c.ProbeName = strings.Repeat("a", 300) },
	} {
		c := good
		mut(&c)
		if _, err := New(c, rules.NewManager(rules.Options{}), nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestWatcherFlipsRulesInNetns runs the watcher against a real DNS server and
// real iptables inside a namespace.
func TestWatcherFlipsRulesInNetns(t *testing.T) {
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("skipping: iptables is not installed")
	}
	ns := netns.New(t)
	ns.MustRun(t, "ip", "addr", "add", "169.254.20.10/32", "dev", "lo")
	var healthy atomic.Bool
	healthy.Store(true)
	var pc net.PacketConn
	if err := ns.Do(func() (err error) { pc, err = net.ListenPacket("udp", "169.254.20.10:53"); return err }); err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		if !healthy.Load() {
			return // a hung cache: no answer
		}
		m := new(dns.Msg)
		m.SetReply(r)
		m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeTXT, Class: dns.ClassCHAOS}, Txt: []string{"test"}}}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	defer srv.Shutdown()

	set := rules.Build(rules.Config{LocalIPs: []netip.Addr{netip.MustParseAddr("169.254.20.10"), netip.MustParseAddr("10.0.0.10")}, DNSPort: 53, HealthPort: 8080})
	mgr := rules.NewManager(rules.Options{})
	// A dead cache left its whole rule set behind.
	if err := ns.Do(func() error { _, err := mgr.Sync(set); return err }); err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Target = "169.254.20.10:53"
	// The timeout only sets how soon the hung cache below is noticed (three
	// probes of up to 1 s); a short one let a healthy cache that was not
	// scheduled for 150 ms on a busy machine look hung, and flip the switch
	// an extra time.
	cfg.Interval, cfg.Timeout = 50*time.Millisecond, time.Second
	cfg.SyncInterval = 100 * time.Millisecond
	cfg.Rules = set
	reg := prometheus.NewRegistry()
	w, err := New(cfg, mgr, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ns.Do(func() error { return w.Run(ctx) }) }()

	switchRules := func() int {
		save := ns.MustRun(t, "iptables-save")
		n := 0
		for _, r := range rules.SwitchOnly(set) {
			n += strings.Count(save, `"`+r.Comment+`"`)
		}
		return n
	}
	owned := func() int { return strings.Count(ns.MustRun(t, "iptables-save"), rules.CommentPrefix) }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if cond() {
				return
			}
		}
		t.Fatalf("timed out waiting for %s", what)
	}
	waitFor("a first probe", func() bool { return testutil.ToFloat64(w.probes.WithLabelValues("success")) >= 2 })
	if !w.Local() || switchRules() != 6 || owned() != len(set) {
		t.Fatalf("healthy start: local=%v switch rules %d, owned %d", w.Local(), switchRules(), owned())
	}
	// It started in the state it found: a restart never interrupts a
	// healthy cache.
	if got := testutil.ToFloat64(w.changes.WithLabelValues("removed")); got != 0 {
		t.Errorf("a watcher starting next to a healthy cache removed %v rules", got)
	}
	healthy.Store(false)
	waitFor("failover", func() bool { return !w.Local() })
	waitFor("switch rules removed", func() bool { return switchRules() == 0 })
	if owned() != len(set)-6 {
		t.Errorf("after failover %d owned rules, want %d", owned(), len(set)-6)
	}
	healthy.Store(true)
	waitFor("fail back", func() bool { return w.Local() })
	waitFor("switch rules back", func() bool { return switchRules() == 6 })
	time.Sleep(300 * time.Millisecond) // a few syncs
	if owned() != len(set) {
		t.Errorf("after syncs %d owned rules, want %d", owned(), len(set))
	}
	if got := testutil.ToFloat64(w.flips.WithLabelValues("endpoints")); got != 1 {
		t.Errorf("flips to endpoints = %v", got)
	}
	if got := testutil.ToFloat64(w.flips.WithLabelValues("local")); got != 1 {
		t.Errorf("flips to local = %v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := owned(); n != 0 {
		t.Errorf("%d rules left after teardown", n)
	}
}

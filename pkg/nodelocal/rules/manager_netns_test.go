package rules

import (
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/testbed/netns"
)

// backends are the iptables commands to test with: the default, and each of
// the nf_tables and legacy backends that is installed.
func backends(t *testing.T) []string {
	var out []string
	for _, b := range []string{"iptables-nft", "iptables-legacy"} {
		if _, err := exec.LookPath(b); err == nil {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		out = append(out, "iptables")
	}
	return out
}

func TestManagerSyncInNetns(t *testing.T) {
	for _, bin := range backends(t) {
		t.Run(bin, func(t *testing.T) {
			if _, err := exec.LookPath(bin); err != nil {
				t.Skipf("skipping: %s not installed", bin)
			}
			ns := netns.New(t)
			m := NewManager(Options{Binary: bin})
			set := Build(Config{LocalIPs: testIPs, DNSPort: 53, HealthPort: 8080})
			do := func(f func() error) {
				t.Helper()
				if err := ns.Do(f); err != nil {
					t.Fatal(err)
				}
			}
			counts := func() map[string]int {
				t.Helper()
				var c map[string]int
				do(func() (err error) { c, err = m.Count(); return err })
				return c
			}
			exact := func(want []Rule) {
				t.Helper()
				c := counts()
				if len(c) != len(want) {
					t.Errorf("%d distinct owned rules installed, want %d: %v", len(c), len(want), c)
				}
				for _, r := range want {
					if c[r.Comment] != 1 {
						t.Errorf("rule %s installed %d times", r, c[r.Comment])
					}
				}
			}
			// A foreign rule in a chain we manage must survive everything.
			ns.MustRun(t, bin, "-w", "-t", "raw", "-A", "PREROUTING", "-d", "10.9.9.9", "-p", "udp", "-m", "comment", "--comment", "someone else", "-j", "NOTRACK")

			var res Result
			do(func() (err error) { res, err = m.Sync(set); return err })
			if res.Added != len(set) || res.Removed != 0 {
				t.Errorf("first sync = %+v, want %d added", res, len(set))
			}
			exact(set)
			for i := 0; i < 3; i++ {
				do(func() (err error) { res, err = m.Sync(set); return err })
				if res != (Result{}) {
					t.Errorf("repeated sync %d changed %+v", i, res)
				}
			}
			exact(set)

			// Someone duplicates one of our rules and deletes another.
			r0, r1 := set[0], set[1]
			ns.MustRun(t, bin, append([]string{"-w", "-t", r0.Table, "-A", r0.Chain}, r0.Spec()...)...)
			ns.MustRun(t, bin, append([]string{"-w", "-t", r0.Table, "-A", r0.Chain}, r0.Spec()...)...)
			ns.MustRun(t, bin, append([]string{"-w", "-t", r1.Table, "-D", r1.Chain}, r1.Spec()...)...)
			do(func() (err error) { res, err = m.Sync(set); return err })
			if res.Added != 1 || res.Removed != 2 {
				t.Errorf("repair sync = %+v, want 1 added, 2 removed", res)
			}
			exact(set)

			// The switch goes off: only the switch rules leave.
			off := WithoutSwitch(set)
			do(func() (err error) { res, err = m.Sync(off); return err })
			if res.Removed != len(SwitchOnly(set)) || res.Added != 0 {
				t.Errorf("switch-off sync = %+v", res)
			}
			exact(off)
			var present int
			do(func() (err error) { present, err = m.Present(SwitchOnly(set)); return err })
			if present != 0 {
				t.Errorf("%d switch rules still present", present)
			}
			do(func() (err error) { res, err = m.Sync(set); return err })
			exact(set)

			do(func() (err error) { res, err = m.Teardown(); return err })
			if res.Removed != len(set) {
				t.Errorf("teardown = %+v", res)
			}
			exact(nil)
			save := ns.MustRun(t, bin+"-save")
			if strings.Contains(save, CommentPrefix) {
				t.Errorf("rules left after teardown:\n%s", save)
			}
			if !strings.Contains(save, "someone else") {
				t.Errorf("foreign rule removed:\n%s", save)
			}
		})
	}
}

func TestManagerIPv6InNetns(t *testing.T) {
	if _, err := exec.LookPath("ip6tables"); err != nil {
		t.Skip("skipping: ip6tables is not installed")
	}
	ns := netns.New(t)
	m := NewManager(Options{})
	set := Build(Config{LocalIPs: []netip.Addr{netip.MustParseAddr("169.254.20.10"), netip.MustParseAddr("fd00::10")}, DNSPort: 53, HealthPort: 8080})
	var res Result
	if err := ns.Do(func() (err error) { res, err = m.Sync(set); return err }); err != nil {
		t.Fatal(err)
	}
	if res.Added != len(set) {
		t.Errorf("sync = %+v, want %d added", res, len(set))
	}
	v6 := ns.MustRun(t, "ip6tables-save")
	if n := strings.Count(v6, CommentPrefix); n != 12 {
		t.Errorf("%d rules in ip6tables, want 12:\n%s", n, v6)
	}
	if strings.Contains(v6, "169.254.20.10") || strings.Contains(ns.MustRun(t, "iptables-save"), "fd00::10") {
		t.Error("a rule landed in the wrong family")
	}
	if err := ns.Do(func() (err error) { res, err = m.Sync(set); return err }); err != nil || res != (Result{}) {
		t.Errorf("repeated sync = %+v, %v", res, err)
	}
	if err := ns.Do(func() (err error) { res, err = m.Teardown(6); return err }); err != nil || res.Removed != len(set) {
		t.Errorf("teardown = %+v, %v", res, err)
	}
}

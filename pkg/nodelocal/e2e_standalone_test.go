package nodelocal

import (
	"net/netip"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tpkit-dev/tpkit/pkg/nodelocal/rules"
	"github.com/tpkit-dev/tpkit/testbed/netns"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// TestCacheOwnRulesAndLeftovers runs the cache alone with
// --setup-iptables (no watcher): it keeps its rules exact through syncs and
// removes them on SIGTERM; with --skip-teardown it leaves them; after
// kill -9 it leaves them too, and a watcher started later removes the switch
// rules that the dead cache left behind.
func TestCacheOwnRulesAndLeftovers(t *testing.T) {
	if why := netns.Available(); why != "" {
		t.Skipf("skipping: %s", why)
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("skipping: iptables is not installed")
	}
	ns := netns.New(t)
	ns.MustRun(t, "ip", "addr", "add", upstreamEP+"/32", "dev", "lo")
	addDefaultRoute(t, ns)
	dnsServer(t, ns, upstreamEP+":53", viaCache)

	set := rules.Build(rules.Config{LocalIPs: []netip.Addr{netip.MustParseAddr(linkLocal), netip.MustParseAddr(kubeDNS)}, DNSPort: 53, HealthPort: 8080})
	owned := func() map[string]int {
		c := map[string]int{}
		for _, l := range strings.Split(ns.MustRun(t, "iptables-save"), "\n") {
			if lr, ok, err := rules.ParseListLine(l); err == nil && ok && strings.HasPrefix(lr.Comment, rules.CommentPrefix) {
				c[lr.Comment]++
			}
		}
		return c
	}
	exactly := func(want []rules.Rule) bool {
		c := owned()
		if len(c) != len(want) {
			return false
		}
		for _, r := range want {
			if c[r.Comment] != 1 {
				return false
			}
		}
		return true
	}
	args := []string{"--local-ip=" + linkLocal + "," + kubeDNS, "--upstream-svc-ip=" + upstreamEP,
		"--upstream-servers=" + upstreamEP, "--sync-interval=100ms", "--metrics-listen-address=", "--drain-duration=500ms"}
	answered := func() bool {
		a, _ := query(ns, kubeDNS+":53", probeQuestion, time.Second)
		return a == viaCache
	}

	// Own rules, exact through syncs, removed on SIGTERM.
	c := startChild(t, ns, "cache", args...)
	testbin.Eventually(t, "the cache to answer", answered)
	testbin.Eventually(t, "the cache's rules", func() bool { return exactly(set) })
	// Someone deletes a rule and duplicates another: the next syncs repair both.
	r0, r1 := set[0], set[3]
	ns.MustRun(t, "iptables", append([]string{"-w", "-t", r0.Table, "-D", r0.Chain}, r0.Spec()...)...)
	ns.MustRun(t, "iptables", append([]string{"-w", "-t", r1.Table, "-A", r1.Chain}, r1.Spec()...)...)
	testbin.Eventually(t, "the cache to repair its rules", func() bool { return exactly(set) })
	time.Sleep(500 * time.Millisecond)
	if !exactly(set) {
		t.Errorf("rules not exact after syncs: %v", owned())
	}
	if err := c.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("cache exit: %v", err)
	}
	if n := len(owned()); n != 0 {
		t.Errorf("%d rules left after SIGTERM", n)
	}

	// --skip-teardown leaves rules and addresses.
	c = startChild(t, ns, "cache", append(args, "--skip-teardown")...)
	testbin.Eventually(t, "the cache's rules", func() bool { return exactly(set) })
	if err := c.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("cache exit: %v", err)
	}
	if !exactly(set) || !strings.Contains(ns.MustRun(t, "ip", "-o", "addr"), kubeDNS+"/32") {
		t.Errorf("--skip-teardown did not leave the rules and addresses: %v", owned())
	}

	// kill -9 leaves everything; a watcher removes the dead cache's switch
	// rules, then tears the rest down on SIGTERM.
	c = startChild(t, ns, "cache", args...)
	testbin.Eventually(t, "the cache to answer", answered)
	_ = c.stop(syscall.SIGKILL)
	if !exactly(set) {
		t.Fatalf("rules after kill -9: %v", owned())
	}
	w := startChild(t, ns, "watch", "--local-ip="+linkLocal+","+kubeDNS, "--sync-interval=100ms", "--metrics-listen-address=")
	testbin.Eventually(t, "the watcher to remove the dead cache's switch rules", func() bool { return exactly(rules.WithoutSwitch(set)) })
	if err := w.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("watcher exit: %v", err)
	}
	if n := len(owned()); n != 0 {
		t.Errorf("%d rules left after the watcher's teardown", n)
	}
}

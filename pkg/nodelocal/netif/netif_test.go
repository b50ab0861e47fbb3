package netif

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/testbed/netns"
)

func TestParseAddrJSON(t *testing.T) {
	in := `[{"ifindex":1,"ifname":"lo","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8},` +
		`{"family":"inet","local":"169.254.20.10","prefixlen":32},{"family":"inet6","local":"::1","prefixlen":128}]}]`
	got, err := ParseAddrJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"127.0.0.1", "169.254.20.10", "::1"} {
		if _, ok := got[netip.MustParseAddr(s)]; !ok {
			t.Errorf("missing %s in %v", s, got)
		}
	}
	labelled, err := ParseAddrJSON([]byte(`[{"addr_info":[{"local":"169.254.20.10","label":"lo:ndc"}]}]`))
	if err != nil || labelled[netip.MustParseAddr("169.254.20.10")] != "lo:ndc" {
		t.Errorf("label: %v %v", labelled, err)
	}
	if len(got) != 3 {
		t.Errorf("got %v", got)
	}
	for _, bad := range []string{"", "{", `{"addr_info":1}`} {
		if _, err := ParseAddrJSON([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseAddrJSON(f *testing.F) {
	f.Add([]byte(`[{"addr_info":[{"local":"10.0.0.10"}]}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseAddrJSON(b)
		if err == nil && m == nil {
			t.Fatal("nil map without error")
		}
	})
}

// TestEnsureTeardownInNetns runs the manager in a namespace: the dummy
// interface when the kernel has it, else the loopback fallback. Both paths
// must end with the IPs present, then absent.
func TestEnsureTeardownInNetns(t *testing.T) {
	ns := netns.New(t)
	ips := []netip.Addr{netip.MustParseAddr("169.254.20.10"), netip.MustParseAddr("10.0.0.10")}
	m := New(Options{Fallback: "lo", IPs: ips})
	var res Result
	run := func(f func() error) {
		t.Helper()
		if err := ns.Do(f); err != nil {
			t.Fatal(err)
		}
	}
	run(func() (err error) { res, err = m.Ensure(); return err })
	if res.AddedAddress != 2 {
		t.Errorf("first ensure = %+v", res)
	}
	_, dummyErr := ns.Run("ip", "link", "add", "tpk-probe0", "type", "dummy")
	if dummyErr == nil {
		ns.MustRun(t, "ip", "link", "del", "tpk-probe0")
		if res.Device != "nodelocaldns" || res.Fallback || !res.CreatedLink {
			t.Errorf("dummy supported, but ensure = %+v", res)
		}
	} else if res.Device != "lo" || !res.Fallback {
		t.Errorf("dummy unsupported (%v), but ensure = %+v", dummyErr, res)
	}
	t.Logf("device %s, fallback %v", res.Device, res.Fallback)
	addrOut := ns.MustRun(t, "ip", "-o", "addr", "show", "dev", res.Device)
	for _, ip := range ips {
		if !strings.Contains(addrOut, ip.String()+"/32") {
			t.Errorf("%s not on %s:\n%s", ip, res.Device, addrOut)
		}
	}
	run(func() (err error) { res, err = m.Ensure(); return err })
	if res.AddedAddress != 0 || res.CreatedLink {
		t.Errorf("second ensure changed things: %+v", res)
	}
	// Someone removes an address: the next ensure puts it back.
	ns.MustRun(t, "ip", "addr", "del", "10.0.0.10/32", "dev", res.Device)
	run(func() (err error) { res, err = m.Ensure(); return err })
	if res.AddedAddress != 1 {
		t.Errorf("repair ensure = %+v", res)
	}
	run(m.Teardown)
	all := ns.MustRun(t, "ip", "-o", "addr")
	for _, ip := range ips {
		if strings.Contains(all, ip.String()) {
			t.Errorf("%s left after teardown:\n%s", ip, all)
		}
	}
	if !strings.Contains(all, "127.0.0.1") {
		t.Errorf("teardown touched other addresses:\n%s", all)
	}
	if links := ns.MustRun(t, "ip", "-o", "link"); strings.Contains(links, "nodelocaldns") {
		t.Errorf("dummy interface left:\n%s", links)
	}
}

func TestNoFallbackFailsClearly(t *testing.T) {
	ns := netns.New(t)
	if _, err := ns.Run("ip", "link", "add", "tpk-probe0", "type", "dummy"); err == nil {
		t.Skip("skipping: the kernel supports dummy interfaces, so there is nothing to fall back from")
	}
	m := New(Options{IPs: []netip.Addr{netip.MustParseAddr("169.254.20.10")}}) // no fallback
	err := ns.Do(func() error { _, err := m.Ensure(); return err })
	var e *Error
	if err == nil || !errors.As(err, &e) || e.Kind != KindInterfaceAdd {
		t.Fatalf("ensure without fallback = %v, want an %s error", err, KindInterfaceAdd)
	}
}

// TestTeardownKeepsWhatWasThere: on the loopback fallback, teardown removes
// the addresses this cache added and those a killed cache left (labelled as
// the cache's), and keeps what was there before: one of the cache's IPs put
// there by someone else, and an unrelated address.
func TestTeardownKeepsWhatWasThere(t *testing.T) {
	ips := []netip.Addr{netip.MustParseAddr("169.254.20.10"), netip.MustParseAddr("10.0.0.10"), netip.MustParseAddr("10.0.0.11")}
	ns := netns.New(t)
	o := Options{Name: "name-too-long-for-a-link", Fallback: "lo", IPs: ips} // link add fails: the loopback fallback is used
	ns.MustRun(t, "ip", "link", "set", "dev", "lo", "up")
	ns.MustRun(t, "ip", "addr", "add", "169.254.20.10/32", "dev", "lo")                      // someone else's
	ns.MustRun(t, "ip", "addr", "add", "192.0.2.1/32", "dev", "lo")                          // unrelated
	ns.MustRun(t, "ip", "addr", "add", "10.0.0.10/32", "dev", "lo", "label", OwnLabel("lo")) // a killed cache's
	m := New(o)
	var res Result
	if err := ns.Do(func() (err error) { res, err = m.Ensure(); return err }); err != nil {
		t.Fatal(err)
	}
	if res.Device != "lo" || res.AddedAddress != 1 || res.CreatedLink {
		t.Fatalf("ensure = %+v, want device lo, 1 address added (10.0.0.11), no link created", res)
	}
	if out := ns.MustRun(t, "ip", "-o", "addr", "show", "dev", "lo"); !strings.Contains(out, "10.0.0.11/32 scope global lo:ndc") {
		t.Errorf("the added address is not labelled as the cache's:\n%s", out)
	}
	if err := ns.Do(m.Teardown); err != nil {
		t.Fatal(err)
	}
	out := ns.MustRun(t, "ip", "-o", "addr", "show", "dev", "lo")
	for _, want := range []string{"169.254.20.10/32", "192.0.2.1/32"} {
		if !strings.Contains(out, want) {
			t.Errorf("%s, there before the cache and not its own, is gone after teardown:\n%s", want, out)
		}
	}
	for _, gone := range []string{"10.0.0.10", "10.0.0.11"} {
		if strings.Contains(out, gone) {
			t.Errorf("%s, the cache's, is left after teardown:\n%s", gone, out)
		}
	}
}

func TestOwnLabel(t *testing.T) {
	for dev, want := range map[string]string{"lo": "lo:ndc", "eth0": "eth0:ndc", "enp0s31f6x": "enp0s31f6x:ndc", "verylongname15c": "verylongnam:ndc"} {
		if got := OwnLabel(dev); got != want || len(got) > 15 {
			t.Errorf("OwnLabel(%q) = %q, want %q", dev, got, want)
		}
	}
}

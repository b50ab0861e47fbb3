package rules

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

var testIPs = []netip.Addr{netip.MustParseAddr("169.254.20.10"), netip.MustParseAddr("10.0.0.10")}

func TestBuild(t *testing.T) {
	set := Build(Config{LocalIPs: testIPs, DNSPort: 53, HealthPort: 8080})
	// Per IP: 5 rules x 2 protocols + 2 health rules.
	if len(set) != 24 {
		t.Fatalf("len = %d, want 24", len(set))
	}
	comments := map[string]bool{}
	perChain := map[string]int{}
	switches := 0
	for _, r := range set {
		if !strings.HasPrefix(r.Comment, CommentPrefix) {
			t.Errorf("comment %q lacks prefix", r.Comment)
		}
		if comments[r.Comment] {
			t.Errorf("duplicate comment %q", r.Comment)
		}
		comments[r.Comment] = true
		perChain[r.Table+"/"+r.Chain]++
		if r.Switch {
			switches++
			if r.IP.String() != "10.0.0.10" || r.Target != "NOTRACK" || r.Table != TableRaw {
				t.Errorf("unexpected switch rule %s", r)
			}
		}
	}
	// The service IP has 3 NOTRACK DNS rules per protocol.
	if switches != 6 {
		t.Errorf("switch rules = %d, want 6", switches)
	}
	want := map[string]int{"raw/PREROUTING": 4, "filter/INPUT": 4, "raw/OUTPUT": 12, "filter/OUTPUT": 4}
	if !reflect.DeepEqual(perChain, want) {
		t.Errorf("per chain = %v, want %v", perChain, want)
	}
	if n := len(WithoutSwitch(set)) + len(SwitchOnly(set)); n != len(set) {
		t.Errorf("switch split loses rules: %d", n)
	}
	if got := Build(Config{LocalIPs: testIPs[:1], DNSPort: 53}); len(got) != 10 || len(SwitchOnly(got)) != 0 {
		t.Errorf("link-local only, no health: %d rules, %d switch", len(got), len(SwitchOnly(got)))
	}
}

func TestBuildSpec(t *testing.T) {
	set := Build(Config{LocalIPs: testIPs[1:], DNSPort: 53})
	r := set[0]
	want := []string{"-p", "udp", "-d", "10.0.0.10", "--dport", "53", "-m", "comment", "--comment",
		"tpkit-nodelocal: notrack dns query to 10.0.0.10 udp/53", "-j", "NOTRACK"}
	if r.Table != "raw" || r.Chain != "PREROUTING" || !reflect.DeepEqual(r.Spec(), want) {
		t.Errorf("first rule = %s, spec %q", r, r.Spec())
	}
	v6 := Build(Config{LocalIPs: []netip.Addr{netip.MustParseAddr("fd00::10")}, DNSPort: 53})
	if v6[0].Family != 6 || !v6[0].Switch {
		t.Errorf("v6 rule = %+v", v6[0])
	}
}

func TestParseListLine(t *testing.T) {
	for _, tc := range []struct {
		line    string
		ok      bool
		chain   string
		args    []string
		comment string
		err     bool
	}{
		{line: "-P PREROUTING ACCEPT"},
		{line: "-N KUBE-SERVICES"},
		{line: ""},
		{line: `-A PREROUTING -d 10.0.0.10/32 -p udp -m udp --dport 53 -m comment --comment "tpkit-nodelocal: x y" -j NOTRACK`,
			ok: true, chain: "PREROUTING", comment: "tpkit-nodelocal: x y",
			args: []string{"-d", "10.0.0.10/32", "-p", "udp", "-m", "udp", "--dport", "53", "-m", "comment", "--comment", "tpkit-nodelocal: x y", "-j", "NOTRACK"}},
		{line: `-A INPUT -m comment --comment plain -j ACCEPT`, ok: true, chain: "INPUT", comment: "plain",
			args: []string{"-m", "comment", "--comment", "plain", "-j", "ACCEPT"}},
		{line: `-A INPUT -m comment --comment "a \"q\" b" -j ACCEPT`, ok: true, chain: "INPUT", comment: `a "q" b`,
			args: []string{"-m", "comment", "--comment", `a "q" b`, "-j", "ACCEPT"}},
		{line: `-A OUTPUT -j ACCEPT`, ok: true, chain: "OUTPUT", args: []string{"-j", "ACCEPT"}},
		{line: `-A INPUT -m comment --comment "open`, err: true},
	} {
		l, ok, err := ParseListLine(tc.line)
		if (err != nil) != tc.err || ok != tc.ok {
			t.Errorf("%q: ok=%v err=%v", tc.line, ok, err)
			continue
		}
		if !ok {
			continue
		}
		if l.Chain != tc.chain || l.Comment != tc.comment || !reflect.DeepEqual(l.Args, tc.args) {
			t.Errorf("%q = %+v", tc.line, l)
		}
	}
}

func FuzzParseListLine(f *testing.F) {
	f.Add(`-A PREROUTING -d 10.0.0.10/32 -p udp -m udp --dport 53 -m comment --comment "tpkit-nodelocal: x" -j NOTRACK`)
	f.Add(`-P INPUT ACCEPT`)
	f.Add(`-A X "unterminated`)
	f.Add(`-A X "a\"b" \`)
	f.Fuzz(func(t *testing.T, line string) {
		l, ok, err := ParseListLine(line)
		if err != nil && ok {
			t.Fatalf("error and ok: %v", err)
		}
		if !ok {
			return
		}
		// Words without quotes, backslashes or blanks survive a re-join.
		plain := true
		for _, a := range l.Args {
			if a == "" || strings.ContainsAny(a, "\"\\ \t\r\n") {
				plain = false
			}
		}
		if plain && !strings.ContainsAny(l.Chain, "\"\\ \t\r\n") && l.Chain != "" {
			again, ok2, err2 := ParseListLine("-A " + l.Chain + " " + strings.Join(l.Args, " "))
			if err2 != nil || !ok2 || !reflect.DeepEqual(again, l) {
				t.Fatalf("round trip of %q: %+v != %+v (%v)", line, again, l, err2)
			}
		}
	})
}

func TestFamilies(t *testing.T) {
	v6 := append([]netip.Addr{netip.MustParseAddr("fd00::a")}, testIPs...)
	for _, c := range []struct {
		ips  []netip.Addr
		want []int
	}{
		{nil, []int{4}},
		{testIPs, []int{4}},
		{[]netip.Addr{netip.MustParseAddr("::ffff:10.0.0.10")}, []int{4}},
		{v6, []int{4, 6}},
	} {
		if got := Families(Build(Config{LocalIPs: c.ips, DNSPort: 53})); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Families(Build(%v)) = %v, want %v", c.ips, got, c.want)
		}
	}
}

package ipaddr

import (
	"math/rand"
	"net/netip"
	"sort"
	"testing"
)

// parseCases are addresses and near-addresses; every test compares ipaddr
// with net/netip on them.
var parseCases = []string{
	"0.0.0.0", "1.2.3.4", "10.0.0.1", "255.255.255.255", "0.1.2.3", "192.0.2.10",
	"256.1.1.1", "010.0.0.1", "1.2.3.04", "1.02.3.4", "1.2.3", "1.2.3.4.5", "1..2.3", "1.2.3.4.", ".1.2.3.4",
	"1.2.3.4:80", " 1.2.3.4", "1.2.3.4 ", "1.2.3.-4", "1.2.3.+4", "0x1.2.3.4", "",
	"::", "::1", "1::", "2001:db8::1", "2001:DB8::1", "2001:0db8:0000:0000:0000:0000:0000:0001",
	"1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "1::2::3", ":::", ":1::", "1::2:", "::1:",
	"00001::", "0001::", "12345::", "fd00::10", "fe80::1%eth0", "fe80::1%", "[::1]",
	"::ffff:1.2.3.4", "::ffff:010.2.3.4", "::FFFF:1.2.3.4", "::1.2.3.4", "1:2:3:4:5:6:1.2.3.4",
	"1:2:3:4:5:6:7:1.2.3.4", "0:0:0:0:0:ffff:1.2.3.4", "::ffff:0:1.2.3.4", "::ffff:1.2.3", "::ffff:1.2.3.4:5",
	"1:0:0:1:0:0:0:1", "1:0:0:0:1:0:0:1", "0:1:0:0:0:0:1:0", "1:0:1:0:1:0:1:0", "0:0:1::", "::ffff:0.0.0.0",
}

func TestParseAddrMatchesNetip(t *testing.T) {
	for _, s := range parseCases {
		checkParse(t, s)
	}
}

// FuzzParseAddr: for any string, ipaddr.ParseAddr agrees with
// net/netip.ParseAddr (zones refused), and a parsed address prints as
// net/netip prints it.
func FuzzParseAddr(f *testing.F) {
	for _, s := range parseCases {
		f.Add(s)
	}
	f.Fuzz(checkParse)
}

func checkParse(t *testing.T, s string) {
	got, err := ParseAddr(s)
	want, werr := netip.ParseAddr(s)
	wantOK := werr == nil && want.Zone() == ""
	if (err == nil) != wantOK {
		t.Fatalf("ParseAddr(%q): %v, %v; net/netip: %v, %v", s, got, err, want, werr)
	}
	if err != nil {
		if got != (Addr{}) {
			t.Fatalf("ParseAddr(%q) failed but returned %v", s, got)
		}
		return
	}
	checkSame(t, s, got, want)
	checkSame(t, s+" unmapped", got.Unmap(), want.Unmap())
}

// checkSame compares every accessor of an Addr with net/netip's.
func checkSame(t *testing.T, what string, got Addr, want netip.Addr) {
	t.Helper()
	if got.String() != want.String() || got.Is4() != want.Is4() || got.Is6() != want.Is6() ||
		got.Is4In6() != want.Is4In6() || got.BitLen() != want.BitLen() || got.IsValid() != want.IsValid() {
		t.Fatalf("%s: %q Is4=%v Is6=%v Is4In6=%v BitLen=%d; net/netip: %q %v %v %v %d", what,
			got.String(), got.Is4(), got.Is6(), got.Is4In6(), got.BitLen(),
			want.String(), want.Is4(), want.Is6(), want.Is4In6(), want.BitLen())
	}
	if !got.IsValid() {
		return
	}
	if got.As16() != want.As16() {
		t.Fatalf("%s: As16 %v, net/netip %v", what, got.As16(), want.As16())
	}
	if want.Is4() || want.Is4In6() {
		if got.As4() != want.As4() {
			t.Fatalf("%s: As4 %v, net/netip %v", what, got.As4(), want.As4())
		}
	}
	if ip := got.IP(); !ip.Equal(want.AsSlice()) || len(ip) != len(want.AsSlice()) {
		t.Fatalf("%s: IP %v, want %v", what, ip, want.AsSlice())
	}
	for _, port := range []uint16{0, 53, 65535} {
		if g, w := AddrPortFrom(got, port).String(), netip.AddrPortFrom(want, port).String(); g != w {
			t.Fatalf("%s: AddrPort %q, net/netip %q", what, g, w)
		}
		if g, w := AddrPortFrom(got, port).AppendTo([]byte("x")), netip.AddrPortFrom(want, port).AppendTo([]byte("x")); string(g) != string(w) {
			t.Fatalf("%s: AddrPort.AppendTo %q, net/netip %q", what, g, w)
		}
	}
}

// randomAddrs are IPv4, IPv6 and IPv4-mapped addresses with runs of zero
// groups, the case the IPv6 form compresses.
func randomAddrs(r *rand.Rand, n int) (got []Addr, want []netip.Addr) {
	for i := 0; i < n; i++ {
		var b [16]byte
		r.Read(b[:])
		for g := 0; g < 8; g++ {
			if r.Intn(2) == 0 {
				b[2*g], b[2*g+1] = 0, 0
			}
		}
		switch r.Intn(4) {
		case 0:
			var b4 [4]byte
			copy(b4[:], b[12:])
			got, want = append(got, AddrFrom4(b4)), append(want, netip.AddrFrom4(b4))
		case 1:
			copy(b[:12], v4InV6Prefix[:])
			fallthrough
		default:
			got, want = append(got, AddrFrom16(b)), append(want, netip.AddrFrom16(b))
		}
	}
	return got, want
}

func TestAddrMatchesNetip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	got, want := randomAddrs(r, 5000)
	for i := range got {
		checkSame(t, want[i].String(), got[i], want[i])
		checkSame(t, want[i].String()+" unmapped", got[i].Unmap(), want[i].Unmap())
		back, err := ParseAddr(got[i].String())
		if err != nil || back != got[i] {
			t.Fatalf("ParseAddr(%q) = %v, %v; want %v", got[i].String(), back, err, got[i])
		}
	}
	// Compare orders as net/netip's does (the zero Addr first), and ==
	// agrees with it.
	got, want = append(got, Addr{}, AddrFrom4([4]byte{1, 2, 3, 4})), append(want, netip.Addr{}, netip.AddrFrom4([4]byte{1, 2, 3, 4}))
	for i := range got {
		j := r.Intn(len(got))
		if g, w := got[i].Compare(got[j]), want[i].Compare(want[j]); g != w || (g == 0) != (got[i] == got[j]) || got[i].Less(got[j]) != want[i].Less(want[j]) {
			t.Fatalf("Compare(%v, %v) = %d, net/netip %d", got[i], got[j], g, w)
		}
	}
	idx := make([]int, len(got))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return got[idx[a]].Less(got[idx[b]]) })
	for k := 1; k < len(idx); k++ {
		if want[idx[k-1]].Compare(want[idx[k]]) > 0 {
			t.Fatalf("sorted by ipaddr, %v comes before %v", want[idx[k-1]], want[idx[k]])
		}
	}
}

func TestZeroAddr(t *testing.T) {
	var z Addr
	if z.IsValid() || z.Is4() || z.Is6() || z.String() != "invalid IP" || z.IP() != nil ||
		AddrPortFrom(z, 1).String() != "invalid AddrPort" || AddrPortFrom(z, 1).IsValid() || len(AddrPortFrom(z, 1).AppendTo(nil)) != 0 {
		t.Fatalf("zero Addr: %v %v %v %q %v", z.IsValid(), z.Is4(), z.Is6(), z.String(), z.IP())
	}
	p := AddrPortFrom(AddrFrom4([4]byte{10, 0, 0, 1}), 8080)
	if p.Addr().String() != "10.0.0.1" || p.Port() != 8080 || !p.IsValid() {
		t.Fatalf("AddrPort: %v %d", p.Addr(), p.Port())
	}
}

// TestAppendToAllocatesNothing: a proxier compares every endpoint's form
// with its own endpoint strings on each sync.
func TestAppendToAllocatesNothing(t *testing.T) {
	p := AddrPortFrom(AddrFrom16([16]byte{0: 0x20, 1: 0x01, 15: 1}), 8080)
	var buf [53]byte
	if n := testing.AllocsPerRun(100, func() { _ = p.AppendTo(buf[:0]) }); n != 0 {
		t.Fatalf("AppendTo into a large enough buffer allocates %v times", n)
	}
}

func TestAs4Panics(t *testing.T) {
	for _, a := range []Addr{{}, AddrFrom16([16]byte{15: 1})} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("As4 of %v did not panic", a)
				}
			}()
			a.As4()
		}()
	}
}

func TestParseError(t *testing.T) {
	_, err := ParseAddr("010.0.0.1")
	pe, ok := err.(*ParseError)
	if !ok || pe.In != "010.0.0.1" || err.Error() != `ipaddr: ParseAddr("010.0.0.1"): not an IP address` {
		t.Fatalf("error %T %v", err, err)
	}
}

func BenchmarkParseAddr(b *testing.B) {
	for _, s := range []string{"10.96.12.34", "fd00:10:96::1234"} {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := ParseAddr(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCompare(b *testing.B) {
	got, _ := randomAddrs(rand.New(rand.NewSource(1)), 1024)
	b.ReportAllocs()
	n := 0
	for i := 0; i < b.N; i++ {
		n += got[i&1023].Compare(got[(i+1)&1023])
	}
	_ = n
}

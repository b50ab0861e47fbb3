package server

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSockaddrAddrPort reads the source addresses recvmmsg writes: IPv4
// and IPv6 sockaddrs, and refuses short or foreign ones.
func TestSockaddrAddrPort(t *testing.T) {
	v4 := func(a string, port uint16) (s sockaddr) {
		binary.NativeEndian.PutUint16(s[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(s[2:], port)
		b := netip.MustParseAddr(a).As4()
		copy(s[4:], b[:])
		return s
	}
	v6 := func(a string, port uint16) (s sockaddr) {
		binary.NativeEndian.PutUint16(s[0:], unix.AF_INET6)
		binary.BigEndian.PutUint16(s[2:], port)
		b := netip.MustParseAddr(a).As16()
		copy(s[8:], b[:])
		return s
	}
	unixSock := func() (s sockaddr) {
		binary.NativeEndian.PutUint16(s[0:], unix.AF_UNIX)
		return s
	}()
	for _, c := range []struct {
		name string
		sa   sockaddr
		n    uint32
		want string // "" for refused
	}{
		{"IPv4", v4("10.1.2.3", 5353), unix.SizeofSockaddrInet4, "10.1.2.3:5353"},
		{"IPv6", v6("fd00::1", 53), unix.SizeofSockaddrInet6, "[fd00::1]:53"},
		{"mapped IPv4 on a dual-stack socket", v6("::ffff:10.1.2.3", 40000), unix.SizeofSockaddrInet6, "[::ffff:10.1.2.3]:40000"},
		{"short IPv4", v4("10.1.2.3", 1), unix.SizeofSockaddrInet4 - 1, ""},
		{"short IPv6", v6("fd00::1", 1), unix.SizeofSockaddrInet4, ""},
		{"no family", sockaddr{}, 1, ""},
		{"another family", unixSock, unix.SizeofSockaddrInet6, ""},
	} {
		got, ok := c.sa.addrPort(c.n)
		if c.want == "" {
			if ok {
				t.Errorf("%s: read as %v, want refused", c.name, got)
			}
			continue
		}
		if !ok || got.String() != c.want {
			t.Errorf("%s: %v %v, want %s", c.name, got, ok, c.want)
		}
	}
}

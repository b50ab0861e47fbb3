package server

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// TestSockaddrAddrPort reads the source addresses recvmmsg writes: IPv4
// and IPv6 sockaddrs, and refuses short or foreign ones.
func TestSockaddrAddrPort(t *testing.T) {
	// of writes a's sockaddr_in (an IPv4 address) or sockaddr_in6 (any
	// other, a mapped IPv4 one included).
	of := func(a string, port uint16) (s sockaddr) {
		addr := netip.MustParseAddr(a)
		binary.BigEndian.PutUint16(s[2:], port)
		if addr.Is4() {
			binary.NativeEndian.PutUint16(s[0:], unix.AF_INET)
			b := addr.As4()
			copy(s[4:], b[:])
		} else {
			binary.NativeEndian.PutUint16(s[0:], unix.AF_INET6)
			b := addr.As16()
			copy(s[8:], b[:])
		}
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
		{"IPv4", of("10.1.2.3", 5353), unix.SizeofSockaddrInet4, "10.1.2.3:5353"},
		{"IPv6", of("fd00::1", 53), unix.SizeofSockaddrInet6, "[fd00::1]:53"},
		{"mapped IPv4 on a dual-stack socket", of("::ffff:10.1.2.3", 40000), unix.SizeofSockaddrInet6, "[::ffff:10.1.2.3]:40000"},
		{"short IPv4", of("10.1.2.3", 1), unix.SizeofSockaddrInet4 - 1, ""},
		{"short IPv6", of("fd00::1", 1), unix.SizeofSockaddrInet4, ""},
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

// TestBatchedUDPOversizedDatagram: a datagram longer than a batch buffer
// arrives cut (MSG_TRUNC), and is answered FORMERR rather than read as
// the query its first 4096 bytes hold.
func TestBatchedUDPOversizedDatagram(t *testing.T) {
	conn := dialBatched(t)
	// A query of exactly batchPacketSize bytes (an OPT record with a large
	// option fills it), then more: its first batchPacketSize bytes read
	// alone as a complete, valid query, and only MSG_TRUNC tells.
	pack := func(fill int) []byte {
		m := new(dns.Msg)
		m.SetQuestion(kdns, dns.TypeA)
		m.Id = 4242
		m.SetEdns0(1232, false)
		opt := m.IsEdns0()
		opt.Option = append(opt.Option, &dns.EDNS0_LOCAL{Code: 65001, Data: make([]byte, fill)})
		q, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	q := pack(batchPacketSize - len(pack(0)))
	if len(q) != batchPacketSize {
		t.Fatalf("query of %d bytes, want %d", len(q), batchPacketSize)
	}
	if _, err := conn.Write(append(q, make([]byte, 100)...)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	var r dns.Msg
	if err := r.Unpack(buf[:n]); err != nil {
		t.Fatal(err)
	}
	if r.Id != 4242 || r.Rcode != dns.RcodeFormatError {
		t.Fatalf("answer id %d rcode %s, want id 4242 FORMERR", r.Id, dns.RcodeToString[r.Rcode])
	}
}

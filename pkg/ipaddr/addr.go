/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package ipaddr

import (
	"encoding/binary"
	"net"
	"strconv"
)

// Addr is an IPv4 or IPv6 address, without a zone. The zero Addr is not a
// valid address. Addrs are comparable with == and usable as map keys.
type Addr struct {
	// a holds the address in 16 bytes; an IPv4 address is kept in its
	// IPv4-mapped form (::ffff:a.b.c.d), so Unmap and Compare need no
	// conversion.
	a [16]byte
	// bits is 0 (invalid), 32 (IPv4) or 128 (IPv6): BitLen, and the first
	// key of Compare.
	bits uint8
}

// v4InV6Prefix is the first 12 bytes of an IPv4-mapped IPv6 address.
var v4InV6Prefix = [12]byte{10: 0xff, 11: 0xff}

// AddrFrom4 returns the IPv4 address given by the bytes of a.
func AddrFrom4(a [4]byte) Addr {
	var x Addr
	copy(x.a[:12], v4InV6Prefix[:])
	copy(x.a[12:], a[:])
	x.bits = 32
	return x
}

// AddrFrom16 returns the IPv6 address given by the bytes of a. An
// IPv4-mapped address stays an IPv6 address (see Unmap).
func AddrFrom16(a [16]byte) Addr { return Addr{a: a, bits: 128} }

// ParseError is ParseAddr's error.
type ParseError struct {
	// In is the string that is not an address.
	In string
}

func (e *ParseError) Error() string {
	return "ipaddr: ParseAddr(" + strconv.Quote(e.In) + "): not an IP address"
}

// ParseAddr parses s as an IPv4 address ("192.0.2.1") or an IPv6 address
// ("2001:db8::1", "::ffff:192.0.2.1"), as net/netip.ParseAddr does, except
// that an address with a zone is an error.
func ParseAddr(s string) (Addr, error) {
	// IPv4, the common case (pod and service addresses), is read here as
	// net/netip reads it: four decimal fields of at most 255 without
	// leading zeros. A ':' anywhere makes it IPv6.
	var b [4]byte
	field, val, digits := 0, 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9' && !(digits == 1 && val == 0) && val*10+int(c-'0') <= 255:
			val = val*10 + int(c-'0')
			digits++
		case c == '.' && digits > 0 && field < 3:
			b[field] = byte(val)
			field, val, digits = field+1, 0, 0
		default:
			for ; i < len(s); i++ {
				if s[i] == ':' {
					return parseV6(s)
				}
			}
			return Addr{}, &ParseError{In: s}
		}
	}
	if field != 3 || digits == 0 {
		return Addr{}, &ParseError{In: s}
	}
	b[3] = byte(val)
	return AddrFrom4(b), nil
}

// parseV6 parses an IPv6 address with net.ParseIP, after refusing what
// net/netip refuses but net.ParseIP of some Go releases takes: a decimal
// field with a leading zero in an IPv4 tail ("::ffff:010.0.0.1", taken
// before Go 1.17) and a group of more than four hex digits. A field is
// decimal when a '.' is next to it.
func parseV6(s string) (Addr, error) {
	start, prevDot := 0, false // the current field, and whether a '.' precedes it
	for i := 0; i <= len(s); i++ {
		dot := i < len(s) && s[i] == '.'
		if i < len(s) && !dot && s[i] != ':' {
			continue
		}
		if n := i - start; prevDot || dot {
			if n > 1 && s[start] == '0' {
				return Addr{}, &ParseError{In: s}
			}
		} else if n > 4 {
			return Addr{}, &ParseError{In: s}
		}
		start, prevDot = i+1, dot
	}
	ip := net.ParseIP(s)
	if len(ip) != net.IPv6len {
		return Addr{}, &ParseError{In: s}
	}
	x := Addr{bits: 128}
	copy(x.a[:], ip)
	return x, nil
}

// IsValid reports whether x is an address (not the zero Addr).
func (x Addr) IsValid() bool { return x.bits != 0 }

// BitLen is 32 for IPv4, 128 for IPv6 and 0 for the zero Addr.
func (x Addr) BitLen() int { return int(x.bits) }

// Is4 reports whether x is an IPv4 address.
func (x Addr) Is4() bool { return x.bits == 32 }

// Is6 reports whether x is an IPv6 address, IPv4-mapped ones included.
func (x Addr) Is6() bool { return x.bits == 128 }

// Is4In6 reports whether x is an IPv4-mapped IPv6 address.
func (x Addr) Is4In6() bool { return x.bits == 128 && x.hasV4Prefix() }

func (x Addr) hasV4Prefix() bool {
	for i := 0; i < 12; i++ {
		if x.a[i] != v4InV6Prefix[i] {
			return false
		}
	}
	return true
}

// Unmap returns x with an IPv4-mapped IPv6 address turned into IPv4; any
// other x is returned as it is.
func (x Addr) Unmap() Addr {
	if x.Is4In6() {
		x.bits = 32
	}
	return x
}

// As4 returns the bytes of an IPv4 or IPv4-mapped address; it panics for
// any other address, as net/netip's does.
func (x Addr) As4() [4]byte {
	if x.bits == 32 || x.Is4In6() {
		var b [4]byte
		copy(b[:], x.a[12:])
		return b
	}
	if x.bits == 0 {
		panic("ipaddr: As4 called on the zero Addr")
	}
	panic("ipaddr: As4 called on an IPv6 address")
}

// As16 returns the address in its 16-byte form; an IPv4 address comes
// IPv4-mapped.
func (x Addr) As16() [16]byte { return x.a }

// IP returns the address as a net.IP (16 bytes for IPv6, 4 for IPv4; nil
// for the zero Addr). It allocates.
func (x Addr) IP() net.IP {
	switch x.bits {
	case 32:
		return net.IP{x.a[12], x.a[13], x.a[14], x.a[15]}
	case 128:
		ip := make(net.IP, net.IPv6len)
		copy(ip, x.a[:])
		return ip
	}
	return nil
}

// Compare returns -1, 0 or 1 as x sorts before, equal to or after y: by
// BitLen first (the zero Addr, then IPv4, then IPv6), then by address, as
// net/netip's Compare orders addresses without zones.
func (x Addr) Compare(y Addr) int {
	if x.bits != y.bits {
		if x.bits < y.bits {
			return -1
		}
		return 1
	}
	for _, off := range [2]int{0, 8} {
		a, b := binary.BigEndian.Uint64(x.a[off:]), binary.BigEndian.Uint64(y.a[off:])
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Less reports whether x sorts before y (see Compare).
func (x Addr) Less(y Addr) bool { return x.Compare(y) < 0 }

// String returns the address in net/netip's form: dotted decimal for IPv4,
// RFC 5952 for IPv6 ("2001:db8::1"; an IPv4-mapped address as
// "::ffff:192.0.2.1"), and "invalid IP" for the zero Addr.
func (x Addr) String() string {
	switch x.bits {
	case 32:
		var buf [15]byte
		return string(x.appendV4(buf[:0]))
	case 128:
		var buf [45]byte
		return string(x.appendV6(buf[:0]))
	}
	return "invalid IP"
}

func (x Addr) appendV4(b []byte) []byte {
	for i := 12; i < 16; i++ {
		if i > 12 {
			b = append(b, '.')
		}
		b = strconv.AppendUint(b, uint64(x.a[i]), 10)
	}
	return b
}

func (x Addr) appendV6(b []byte) []byte {
	if x.hasV4Prefix() {
		b = append(b, "::ffff:"...)
		return x.appendV4(b)
	}
	// RFC 5952: the longest run of two or more zero groups, the first of
	// equal runs, becomes "::".
	zs, ze := -1, -1
	for i := 0; i < 8; {
		if x.group(i) != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && x.group(j) == 0 {
			j++
		}
		if j-i >= 2 && j-i > ze-zs {
			zs, ze = i, j
		}
		i = j
	}
	for i := 0; i < 8; i++ {
		if i == zs {
			b = append(b, ':', ':')
			i = ze - 1
			continue
		}
		if i > 0 && i != ze {
			b = append(b, ':')
		}
		b = strconv.AppendUint(b, uint64(x.group(i)), 16)
	}
	return b
}

func (x Addr) group(i int) uint16 { return binary.BigEndian.Uint16(x.a[2*i:]) }

// AddrPort is an address and a port number.
type AddrPort struct {
	ip   Addr
	port uint16
}

// AddrPortFrom returns the address ip with port port.
func AddrPortFrom(ip Addr, port uint16) AddrPort { return AddrPort{ip: ip, port: port} }

// Addr returns the address.
func (p AddrPort) Addr() Addr { return p.ip }

// Port returns the port.
func (p AddrPort) Port() uint16 { return p.port }

// IsValid reports whether the address is valid.
func (p AddrPort) IsValid() bool { return p.ip.IsValid() }

// String returns "192.0.2.1:80" or "[2001:db8::1]:80" (net/netip's form,
// which is also net.JoinHostPort's), and "invalid AddrPort" for an invalid
// address.
func (p AddrPort) String() string {
	if !p.ip.IsValid() {
		return "invalid AddrPort"
	}
	var buf [53]byte // "[" + 45 + "]:" + 5
	return string(p.AppendTo(buf[:0]))
}

// AppendTo appends String's form to b and returns the result; nothing for
// an invalid address. A caller that compares or looks up the form (in
// []byte, as string(b)) then allocates nothing.
func (p AddrPort) AppendTo(b []byte) []byte {
	switch p.ip.bits {
	case 32:
		b = p.ip.appendV4(b)
	case 128:
		b = append(b, '[')
		b = p.ip.appendV6(b)
		b = append(b, ']')
	default:
		return b
	}
	b = append(b, ':')
	return strconv.AppendUint(b, uint64(p.port), 10)
}

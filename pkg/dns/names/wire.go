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

package names

import (
	"github.com/tpkit-dev/tpkit/pkg/ipaddr"
)

// MaxWire is the longest a wire-format name can be.
const MaxWire = 255

// Lower copies the wire-format name src into dst in lowercase ASCII and
// returns the number of bytes copied, or -1 when src is not a well-formed,
// uncompressed wire name that fits dst. dst must hold MaxWire bytes.
func Lower(dst, src []byte) int {
	i := 0
	for {
		if i >= len(src) || i >= len(dst) {
			return -1
		}
		l := int(src[i])
		if l > 63 || i+1+l > len(src) || i+1+l > len(dst) {
			return -1
		}
		dst[i] = src[i]
		for j := i + 1; j <= i+l; j++ {
			c := src[j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst[j] = c
		}
		i += 1 + l
		if l == 0 {
			return i
		}
	}
}

// Split records the start offset of every label of the wire name w into
// offs and returns how many there are (the root label not counted), or -1
// when offs is too small or w is malformed.
func Split(w []byte, offs []uint8) int {
	n, i := 0, 0
	for i < len(w) {
		l := int(w[i])
		if l == 0 {
			return n
		}
		if n >= len(offs) || i > 255 || i+1+l > len(w) {
			return -1
		}
		offs[n] = uint8(i)
		n++
		i += 1 + l
	}
	return -1
}

// Label returns label k of w given the offsets from Split.
func Label(w []byte, offs []uint8, k int) []byte {
	o := int(offs[k])
	return w[o+1 : o+1+int(w[o])]
}

// ParseDashedIP reads a pod name such as "10-0-0-1" or "fd00--1" as an
// address, the way the CoreDNS kubernetes plugin does: three dashes and no
// "--" make an IPv4 address, anything else is read as IPv6 with ':' for '-'.
func ParseDashedIP(b []byte) (ipaddr.Addr, bool) {
	if len(b) == 0 || len(b) > 45 {
		return ipaddr.Addr{}, false
	}
	var buf [45]byte
	dashes, double := 0, false
	for i, c := range b {
		if c == '-' {
			dashes++
			if i > 0 && b[i-1] == '-' {
				double = true
			}
		}
	}
	sep := byte(':')
	if dashes == 3 && !double {
		sep = '.'
	}
	for i, c := range b {
		if c == '-' {
			c = sep
		}
		buf[i] = c
	}
	a, err := ipaddr.ParseAddr(string(buf[:len(b)])) // no zones
	if err != nil {
		return ipaddr.Addr{}, false
	}
	return a, true
}

// ParseReverse reads the address of a reverse name from its labels, leftmost
// first, including the trailing "in-addr"/"ip6" and "arpa" labels. It accepts
// only complete addresses (4 octets, 32 nibbles).
func ParseReverse(labels [][]byte) (ipaddr.Addr, bool) {
	n := len(labels)
	if n < 2 || string(labels[n-1]) != "arpa" {
		return ipaddr.Addr{}, false
	}
	switch string(labels[n-2]) {
	case "in-addr":
		if n != 6 {
			return ipaddr.Addr{}, false
		}
		var a [4]byte
		for i := 0; i < 4; i++ {
			v, ok := octet(labels[3-i])
			if !ok {
				return ipaddr.Addr{}, false
			}
			a[i] = v
		}
		return ipaddr.AddrFrom4(a), true
	case "ip6":
		if n != 34 {
			return ipaddr.Addr{}, false
		}
		var a [16]byte
		for i := 0; i < 32; i++ {
			l := labels[31-i]
			if len(l) != 1 {
				return ipaddr.Addr{}, false
			}
			v, ok := nibble(l[0])
			if !ok {
				return ipaddr.Addr{}, false
			}
			if i%2 == 0 {
				a[i/2] = v << 4
			} else {
				a[i/2] |= v
			}
		}
		return ipaddr.AddrFrom16(a), true
	}
	return ipaddr.Addr{}, false
}

func octet(b []byte) (byte, bool) {
	if len(b) == 0 || len(b) > 3 || (len(b) > 1 && b[0] == '0') {
		return 0, false
	}
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	if v > 255 {
		return 0, false
	}
	return byte(v), true
}

func nibble(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// FromDotted writes the dotted name s (such as an ExternalName target; the
// trailing dot is optional) into dst as a lowercase wire-format name and
// returns its length, or -1 when s is not a name: an empty label, a label
// over 63 bytes, or more than MaxWire bytes in all. dst must hold MaxWire
// bytes.
func FromDotted(dst []byte, s string) int {
	if len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	room := len(dst) // no min builtin: the core is written in Go 1.13
	if room > MaxWire {
		room = MaxWire
	}
	i := 0
	for rest := s; rest != ""; {
		l, more, dot := cutDot(rest)
		if l == "" || len(l) > 63 || i+1+len(l)+1 > room || (dot && more == "") {
			return -1
		}
		dst[i] = byte(len(l))
		for k := 0; k < len(l); k++ {
			c := l[k]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst[i+1+k] = c
		}
		i += 1 + len(l)
		rest = more
	}
	if i >= room {
		return -1
	}
	dst[i] = 0
	return i + 1
}

// IsAddress reports whether the dotted name s (trailing dot optional) is an
// IP address literal, such as an ExternalName of "10.0.0.1". Only strings
// made of address characters are parsed, so a host name costs a scan.
func IsAddress(s string) bool {
	if len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || c == '.' || c == ':' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	_, err := ipaddr.ParseAddr(s)
	return err == nil
}

// cutDot is strings.Cut(s, "."), which is Go 1.18.
func cutDot(s string) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

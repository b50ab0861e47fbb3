package server

import (
	"encoding/binary"
	"net/netip"

	"github.com/miekg/dns"
)

// EDNS Client Subnet (RFC 7871). A node-local cache in front of the server
// sends every pod's query from the node's address, and adds the pod's
// address as a client subnet option. The server takes the querier's
// identity from that option only when the packet comes from a trusted
// forwarder, and says in its answer how much of the address the answer
// depended on: all of it when the querier's identity was consulted (see
// result.identity), none otherwise, so that the cache shares an answer
// between pods only when it is the same for all of them.

// optionClientSubnet is the EDNS option code of ECS.
const optionClientSubnet = 8

// clientSubnet is a query's ECS option.
type clientSubnet struct {
	present bool
	family  uint16 // 1 IPv4, 2 IPv6
	source  uint8  // SOURCE PREFIX-LENGTH
	// addr holds the address bytes sent (the first (source+7)/8), the
	// rest zero.
	addr [16]byte
}

// addrLen is the number of address bytes the option carries.
func (c *clientSubnet) addrLen() int { return (int(c.source) + 7) / 8 }

// wireLen is the size of the option in an OPT record's RDATA, 0 when
// there is none.
func (c *clientSubnet) wireLen() int {
	if !c.present {
		return 0
	}
	return 8 + c.addrLen()
}

// host returns the single address the option names: only a full-length
// prefix (/32, /128) identifies one client.
func (c *clientSubnet) host() (netip.Addr, bool) {
	switch {
	case !c.present:
	case c.family == 1 && c.source == 32:
		return netip.AddrFrom4([4]byte(c.addr[:4])), true
	case c.family == 2 && c.source == 128:
		return netip.AddrFrom16(c.addr).Unmap(), true
	}
	return netip.Addr{}, false
}

// parseClientSubnet reads an ECS option's data. It reports false for data
// RFC 7871 calls malformed: an unknown family, a prefix longer than the
// family's address, address bytes that do not match the prefix, or set
// bits past it.
func parseClientSubnet(b []byte, c *clientSubnet) bool {
	if len(b) < 4 {
		return false
	}
	*c = clientSubnet{present: true, family: binary.BigEndian.Uint16(b), source: b[2]}
	max := 0
	switch c.family {
	case 1:
		max = 32
	case 2:
		max = 128
	default:
		return false
	}
	if int(c.source) > max || b[3] != 0 || len(b)-4 != c.addrLen() {
		return false
	}
	copy(c.addr[:], b[4:])
	if n := c.addrLen(); n > 0 && c.source%8 != 0 {
		if c.addr[n-1]&(0xFF>>(c.source%8)) != 0 {
			return false
		}
	}
	return true
}

// appendClientSubnet appends the option for an answer: the query's family,
// source prefix and address, with scope prefix scope.
func appendClientSubnet(b []byte, c *clientSubnet, scope uint8) []byte {
	b = binary.BigEndian.AppendUint16(b, optionClientSubnet)
	b = binary.BigEndian.AppendUint16(b, uint16(4+c.addrLen()))
	b = binary.BigEndian.AppendUint16(b, c.family)
	b = append(b, c.source, scope)
	return append(b, c.addr[:c.addrLen()]...)
}

// trustedForwarder reports whether src may name the querier in an ECS
// option.
func (h *Handler) trustedForwarder(src netip.Addr) bool {
	for _, p := range h.opts.TrustedForwarders {
		if p.Contains(src) {
			return true
		}
	}
	return false
}

// querierAddr is the address the resolver identifies the querier by: the
// ECS address of a query from a trusted forwarder (fromECS), else the
// packet's source.
func (h *Handler) querierAddr(src netip.Addr, c *clientSubnet) (addr netip.Addr, fromECS bool) {
	if !c.present || !h.trustedForwarder(src) {
		return src, false
	}
	if a, ok := c.host(); ok {
		return a, true
	}
	return src, false
}

// withoutClientSubnet returns r, or a copy of it without its ECS option:
// a pod's address is not sent to the upstreams of names outside the zones.
func withoutClientSubnet(r *dns.Msg) *dns.Msg {
	opt := r.IsEdns0()
	if opt == nil {
		return r
	}
	for i, o := range opt.Option {
		if o.Option() != optionClientSubnet {
			continue
		}
		c := r.Copy()
		copt := c.IsEdns0()
		copt.Option = append(append([]dns.EDNS0(nil), opt.Option[:i]...), opt.Option[i+1:]...)
		return c
	}
	return r
}

// readClientSubnet reads the ECS option of a query's OPT record into c. It
// reports false when the option is malformed (FORMERR, RFC 7871 §7.1.1).
func readClientSubnet(opt *dns.OPT, c *clientSubnet) bool {
	*c = clientSubnet{}
	for _, o := range opt.Option {
		s, ok := o.(*dns.EDNS0_SUBNET)
		if !ok {
			continue
		}
		ip := s.Address.To16()
		if s.Family == 1 {
			ip = s.Address.To4()
		}
		n := (int(s.SourceNetmask) + 7) / 8
		if ip == nil || n > len(ip) {
			return false
		}
		var buf [20]byte
		b := append(append(buf[:0], byte(s.Family>>8), byte(s.Family), s.SourceNetmask, s.SourceScope), ip[:n]...)
		return parseClientSubnet(b, c)
	}
	return true
}

// scanClientSubnet reads the ECS option, if any, from the RDATA of a raw OPT
// record into c. It reports false when the options do not parse.
func scanClientSubnet(rdata []byte, c *clientSubnet) bool {
	*c = clientSubnet{}
	for len(rdata) > 0 {
		if len(rdata) < 4 {
			return false
		}
		code, n := binary.BigEndian.Uint16(rdata), int(binary.BigEndian.Uint16(rdata[2:]))
		if len(rdata) < 4+n {
			return false
		}
		if code == optionClientSubnet && !c.present {
			if !parseClientSubnet(rdata[4:4+n], c) {
				return false
			}
		}
		rdata = rdata[4+n:]
	}
	return true
}

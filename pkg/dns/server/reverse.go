package server

import (
	"net/netip"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/names"
	"github.com/tpkit-dev/tpkit/pkg/ipaddr"
)

// reverseName adds the records of a name in a reverse zone: PTR for
// service and endpoint addresses, dns-version and ns.dns as in any zone.
// Any other name falls through to the forwarder, as CoreDNS's usual
// "fallthrough in-addr.arpa ip6.arpa" does.
func (h *Handler) reverseName(st *state, z *zone, qtype uint16) verdict {
	if nrel := st.nl - z.nlabels; nrel <= 2 {
		if k := names.Parse(st.labels[:nrel]).Kind; k == names.DNSVersion || k == names.NameServer {
			if h.special(st, k, qtype) == exists {
				return exists
			}
		}
	}
	if qtype == dns.TypePTR && h.primary != nil {
		for i := st.nl - z.nlabels; i < st.nl; i++ {
			st.labels[i] = names.Label(st.lw[:], st.offs[:], i)
		}
		if a, ok := names.ParseReverse(st.labels[:st.nl]); ok && h.ptr(st, netipOf(a)) {
			return exists
		}
	}
	return fallsThrough
}

// ptr adds the PTR records of address a, from the first partition (in the
// order of partitionAt) that has an owner of it the querier may see. A
// cluster IP wins over endpoints, and yields one record.
func (h *Handler) ptr(st *state, a netip.Addr) bool {
	snap := st.snap
	owners := snap.PTRs(a, st.ptrs[:0])
	st.ptrs = owners // the records point into it: no more appends this query
	if len(owners) == 0 {
		return false
	}
	who := &st.who
	h.identify(who, snap)
	if len(snap.TPs) > 1 || h.opts.Isolation {
		st.res.identity = true
	}
	ntp := len(snap.TPs)
	for k := 0; k < ntp; k++ {
		tp, ok := partitionAt(k, ntp, who.source, h.opts.SystemPartition)
		if !ok {
			continue
		}
		var clusterIP *index.PTR
		for i := range owners {
			if o := &owners[i]; o.TP == tp && !o.IsEndpoint() && h.ptrVisible(snap, o, who) {
				clusterIP = o
				break
			}
		}
		if clusterIP != nil {
			h.addPTR(st, clusterIP)
			st.res.answeredBy(tp)
			return true
		}
		wrote := false
		for i := range owners {
			if o := &owners[i]; o.TP == tp && h.ptrVisible(snap, o, who) {
				h.addPTR(st, o)
				wrote = true
			}
		}
		if wrote {
			st.res.answeredBy(tp)
			return true
		}
	}
	return false
}

// addPTR adds a PTR record to the name of o in the primary zone.
func (h *Handler) addPTR(st *state, o *index.PTR) {
	r := st.next()
	r.kind, r.ttl = rrPTR, h.opts.TTL
	r.owns = o
}

// netipOf is a as a net/netip.Addr, which the index keys by: pkg/dns/names
// is a core, written for Go 1.13, and returns pkg/ipaddr's addresses. An
// IPv4 address stays IPv4 and an IPv4-mapped one IPv6, as netip.ParseAddr
// reads them.
func netipOf(a ipaddr.Addr) netip.Addr {
	if a.Is4() {
		return netip.AddrFrom4(a.As4())
	}
	return netip.AddrFrom16(a.As16())
}

package server

import (
	"net/netip"
	"slices"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/names"
)

// apex adds the records of the zone's own name: SOA, NS, or none.
func (h *Handler) apex(st *state, qtype uint16) verdict {
	switch qtype {
	case dns.TypeSOA:
		h.add(st, record{kind: rrSOA, ttl: h.soaTTL(), serial: st.snap.Serial})
	case dns.TypeNS:
		if len(h.opts.NSAddrs) > 0 {
			h.add(st, record{kind: rrNS, ttl: h.opts.TTL})
			for _, a := range h.nsAddrs(st) {
				h.add(st, record{kind: rrAddr, section: extraSection, owner: ownerNameServer, ttl: h.opts.TTL, addr: a})
			}
		}
	}
	return exists
}

// special adds the records of dns-version.<zone> and ns.dns.<zone>, which
// CoreDNS answers in every zone it serves, reverse ones too. The name is
// missing when CoreDNS reads the query as one for a service name, which
// does not exist: dns-version for any type but TXT, ns.dns for TXT and PTR.
func (h *Handler) special(st *state, k names.Kind, qtype uint16) verdict {
	if k == names.DNSVersion {
		if qtype != dns.TypeTXT {
			return missing
		}
		h.add(st, record{kind: rrTXT, ttl: dnsVersionTTL, text: DNSSchemaVersion})
		return exists
	}
	switch qtype {
	case dns.TypeTXT, dns.TypePTR:
		return missing
	case dns.TypeA, dns.TypeAAAA:
		for _, a := range h.nsAddrs(st) {
			if a.Is6() == (qtype == dns.TypeAAAA) {
				h.add(st, record{kind: rrAddr, ttl: h.opts.TTL, addr: a})
			}
		}
	}
	return exists
}

// nsAddrs returns the addresses of ns.dns.<zone>, in st.addrs. CoreDNS
// answers the cluster IPs of the services whose endpoints are its own
// addresses (the kube-dns service), the endpoint addresses for a headless
// one, and its own addresses when it finds no such endpoint. Here each
// partition may have its own kube-dns service in front of the server: the
// querier's partition is tried first, then the system partition, then the
// rest, and the first with such a service (visible to the querier)
// answers, so that a pod gets the address it reaches the server at.
func (h *Handler) nsAddrs(st *state) []netip.Addr {
	snap := st.snap
	dst := st.addrs[:0]
	defer func() { st.addrs = dst }()
	if len(h.opts.NSAddrs) == 0 {
		return dst
	}
	h.identify(&st.who, snap)
	st.res.identity = true
	ntp := len(snap.TPs)
	for k := 0; k < ntp; k++ {
		tp, ok := partitionAt(k, ntp, st.who.source, h.opts.SystemPartition)
		if !ok {
			continue
		}
		var buf [4]index.PTR
		for _, own := range h.opts.NSAddrs {
			owners := snap.PTRs(own, buf[:0])
			for i := range owners {
				o := &owners[i]
				if o.TP != tp || !o.IsEndpoint() || !h.ptrVisible(snap, o, &st.who) {
					continue
				}
				v := o.View()
				if v.Type != index.Headless {
					dst = appendNew(dst, v.ClusterIPs()...)
					continue
				}
				for j, n := 0, v.AddrCount(); j < n; j++ {
					dst = appendNew(dst, v.Addr(j))
				}
			}
		}
		if len(dst) > 0 {
			st.res.answeredBy(tp)
			return dst
		}
	}
	dst = appendNew(dst, h.opts.NSAddrs...)
	return dst
}

// appendNew appends the addresses of as that dst does not hold yet.
func appendNew(dst []netip.Addr, as ...netip.Addr) []netip.Addr {
	for _, a := range as {
		if !slices.Contains(dst, a) {
			dst = append(dst, a)
		}
	}
	return dst
}

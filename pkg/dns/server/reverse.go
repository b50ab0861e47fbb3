package server

import (
	"net/netip"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/names"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// reverse answers names in a reverse zone: PTR for service and endpoint
// addresses, dns-version and ns.dns as in any zone. Any other name goes to
// the forwarder, as CoreDNS's usual "fallthrough in-addr.arpa ip6.arpa"
// does, or is NXDOMAIN without one.
func (h *Handler) reverse(st *state, z *zone, snap *index.Snapshot, qtype uint16) int {
	e := &st.enc
	if nrel := st.nl - z.nlabels; nrel <= 2 {
		if k := names.Parse(st.labels[:nrel]).Kind; k == names.DNSVersion || k == names.NameServer {
			if h.special(st, snap, k, qtype) {
				return h.finishAnswer(e, z, snap)
			}
		}
	}
	if qtype == dns.TypePTR && h.primary >= 0 {
		for i := st.nl - z.nlabels; i < st.nl; i++ {
			st.labels[i] = names.Label(st.lw[:], st.offs[:], i)
		}
		if a, ok := names.ParseReverse(st.labels[:st.nl]); ok && h.ptr(e, snap, a, st.source, st.known) {
			return dns.RcodeSuccess
		}
	}
	// Before the first sync the miss may be a cluster address not indexed
	// yet: SERVFAIL (see nxdomain), not an upstream NXDOMAIN that clients
	// would cache.
	if h.opts.Forwarder != nil && h.synced.Load() {
		return rcodeForward
	}
	return h.nxdomain(e, z, snap)
}

// rcodeForward asks ServeDNS to forward a reverse-zone miss.
const rcodeForward = -1

func (h *Handler) ptr(e *encoder, snap *index.Snapshot, a netip.Addr, src index.Source, known bool) bool {
	owners := snap.PTRs(a)
	if len(owners) == 0 {
		return false
	}
	pz := &h.zones[h.primary]
	ntp := len(snap.TPs)
	for k := 0; k < ntp; k++ {
		tp := partitionAt(k, ntp, src, h.opts.SystemPartition)
		if tp < 0 || tp >= ntp {
			continue
		}
		// A cluster IP wins over endpoints, and yields one record.
		best := -1
		for i := range owners {
			o := &owners[i]
			if o.TP != tp || !h.ptrVisible(snap, o, src, known) {
				continue
			}
			if o.Host() == "" {
				best = i
				break
			}
		}
		wrote := false
		for i := range owners {
			o := &owners[i]
			if o.TP != tp || !h.ptrVisible(snap, o, src, known) {
				continue
			}
			if best >= 0 && i != best {
				continue
			}
			r := e.begin(answerSection)
			e.owner()
			d := e.typ(typePTR, h.opts.TTL)
			if host := o.Host(); host != "" {
				e.label(host)
			}
			e.label(o.Service())
			e.label(o.Namespace)
			if o.Tenant != tenancy.SystemTenant {
				e.label(o.Tenant)
			}
			e.label("svc")
			e.buf = append(e.buf, pz.wire...)
			e.end(r, d)
			wrote = true
		}
		if wrote {
			return true
		}
	}
	return false
}

func (h *Handler) ptrVisible(snap *index.Snapshot, o *index.PTR, src index.Source, known bool) bool {
	if o.Tenant == tenancy.SystemTenant {
		return true
	}
	if home, ok := snap.Home([]byte(o.Tenant)); !ok || home != o.TP {
		return false
	}
	return h.allowed([]byte(o.Tenant), src, known)
}

package server

import (
	"net/netip"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/names"
)

// resolve answers the question whose lowercase name is in st.lw (split at
// st.offs), in zone z, for a querier at src. It reads the index and nothing
// else, and returns st.res.
//
// The lookups (lookupName, apex, reverseName) only add the records they
// find and say whether the name exists; the outcome and the authority
// section are decided once, here, by conclude, as CoreDNS's handler does
// at its end.
func (h *Handler) resolve(st *state, z *zone, qtype, qclass uint16, src netip.Addr) *result {
	// Field by field: assigning whole structs that hold pointers costs the
	// fast path about 5%.
	res := &st.res
	res.outcome, res.zone, res.records, res.upstream = answered, z, st.recs[:0], ""
	res.tp, res.fromTP, res.identity, res.unsure = 0, false, false, false
	st.who.addr, st.who.looked, st.cname = src, false, ""
	v := refuse
	if qtype != dns.TypeAXFR && qtype != dns.TypeIXFR && qclass == dns.ClassINET {
		st.snap = h.snaps.Current()
		nrel := st.nl - z.nlabels
		st.readLabels(nrel)
		switch {
		case nrel == 0:
			v = h.apex(st, qtype)
		case qtype == dns.TypeSOA:
			// CoreDNS answers SOA only at the apex, and NODATA for any
			// name below.
			v = exists
		case z.reverse:
			v = h.reverseName(st, z, qtype)
		default:
			v = h.lookupName(st, z, qtype, true)
			if st.cname != "" {
				h.followTargets(st, qtype)
			}
		}
	}
	h.conclude(st, v)
	// A system name that several TPs have, answered from the system
	// partition to a querier the index does not know (a new pod whose
	// address its TP has not reported yet, or a host-network client), has
	// TTL 0: a cache in front (node-cache, a client's own) must not keep
	// that answer for a pod that is known, in another TP, a moment later
	// (docs/dns.md, "The system tenant").
	if res.unsure {
		for i := range res.records {
			res.records[i].ttl = 0
		}
	}
	st.recs = res.records // keep the grown scratch space
	return res
}

// maxCNAMEs bounds a chain of ExternalName services answered from the
// index (followTargets), as CoreDNS's does (it follows at most 8 CNAMEs).
const maxCNAMEs = 8

// followTargets answers the CNAME chain an ExternalName started, as
// CoreDNS's kubernetes plugin does: a target in a served forward zone is
// looked up as a question's name is, and its records follow its CNAME;
// a target outside the zones ends the chain, for the handler to ask the
// forwarder (result.upstream). A chain that reaches a name without records
// of the type, or has more than maxCNAMEs CNAMEs, is taken back whole
// (NODATA, as CoreDNS).
func (h *Handler) followTargets(st *state, qtype uint16) {
	res := &st.res
	start := len(res.records) - 1 // the first CNAME
	for n := 1; st.cname != ""; n++ {
		target := st.cname
		st.cname = ""
		if n > maxCNAMEs {
			res.records = res.records[:start]
			return
		}
		z, ok := h.targetZone(st, target)
		if !ok {
			res.upstream = target
			return
		}
		before := len(res.records)
		st.readLabels(st.nl - z.nlabels)
		h.lookupName(st, z, qtype, false)
		if len(res.records) == before {
			res.records = res.records[:start]
			return
		}
	}
}

// conclude turns what the lookups found into the result's outcome, in
// one place: a name that does not exist is NXDOMAIN (SERVFAIL before the
// first sync), a reverse name the index has no owner of is the
// forwarder's, and an answer without answer records carries the zone's
// SOA as authority.
func (h *Handler) conclude(st *state, v verdict) {
	res := &st.res
	switch {
	case v == refuse:
		res.outcome = refused
		return
	case v == fallsThrough && h.opts.Forwarder != nil && h.synced.Load():
		res.outcome = forwarded
		return
	case v != exists && !h.synced.Load():
		// The miss may be a name not indexed yet: SERVFAIL, not an
		// NXDOMAIN (ours or the upstream's) that clients would cache.
		res.outcome = notSynced
	case v != exists:
		res.outcome = noSuchName
	}
	if !res.answers() {
		r := st.next()
		r.kind, r.section, r.owner, r.ttl, r.serial = rrSOA, authoritySection, ownerZone, h.soaTTL(), st.snap.Serial
	}
}

// readLabels points st.labels at the first n labels of the name in st.lw.
func (st *state) readLabels(n int) {
	for i := 0; i < n; i++ {
		st.labels[i] = names.Label(st.lw[:], st.offs[:], i)
	}
}

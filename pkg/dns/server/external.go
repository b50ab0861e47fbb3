package server

import (
	"context"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/names"
)

// maxCNAMEs bounds a chain of ExternalName services answered from the
// index, as CoreDNS's does (it follows at most 8 CNAMEs).
const maxCNAMEs = 8

// cname writes the CNAME of an ExternalName service to target and then the
// target's records of type qtype, as CoreDNS's kubernetes plugin does. A
// target in a served forward zone is answered from the index, and when it
// has no such records the CNAME is taken back too (NODATA, as CoreDNS). Any
// other target is asked of the forwarder (see resolveTarget). depth is the
// number of CNAMEs already written; past maxCNAMEs nothing is written and
// the chain above is taken back.
func (h *Handler) cname(st *state, snap *index.Snapshot, target string, qtype uint16, depth int) {
	e := &st.enc
	if depth >= maxCNAMEs {
		return
	}
	before := e.mark()
	r := e.begin(answerSection)
	e.owner()
	rd := e.typ(typeCNAME, h.opts.TTL)
	e.fqdn(target)
	// A CNAME that does not fit is dropped (and TC set), but the chain is
	// still followed: if it leads nowhere, the answer is NODATA, not TC.
	e.end(r, rd)
	zi := h.targetZone(st, target)
	if zi < 0 {
		h.resolveTarget(st, target, qtype)
		return
	}
	if !h.chase(st, snap, zi, rd, qtype, depth+1) {
		e.rollback(before)
	}
}

// targetZone reads target into st.lw and st.offs and returns the served
// forward zone that holds it, or -1. A reverse zone holds no address
// records, so a target there goes upstream, as CoreDNS's would.
func (h *Handler) targetZone(st *state, target string) int {
	n := names.FromDotted(st.lw[:], target)
	if n < 0 {
		return -1
	}
	if st.nl = names.Split(st.lw[:n], st.offs[:]); st.nl < 0 {
		return -1
	}
	zi := h.zoneOf(st.lw[:n], st.offs[:st.nl])
	if zi < 0 || h.zones[zi].reverse {
		return -1
	}
	return zi
}

// chase writes the qtype records of the name in st.lw, in zone zi, owned by
// the CNAME target written at offset at; depth CNAMEs lead to it. It
// reports whether the name has such records, written or dropped for want
// of room.
func (h *Handler) chase(st *state, snap *index.Snapshot, zi, at int, qtype uint16, depth int) bool {
	e := &st.enc
	owner, ok := pointerTo(at)
	if !ok {
		return false
	}
	z := &h.zones[zi]
	nrel := st.nl - z.nlabels
	for i := 0; i < nrel; i++ {
		st.labels[i] = names.Label(st.lw[:], st.offs[:], i)
	}
	req := names.Parse(st.labels[:nrel])
	saved, n := e.ownerPtr, e.tried(answerSection)
	e.ownerPtr = owner
	switch req.Kind {
	case names.NameServer:
		h.special(st, snap, req.Kind, qtype)
	case names.Service, names.Pod:
		if f, ok := h.lookup(snap, &req, st.source, st.known); ok {
			h.records(st, z, snap, &f, qtype, depth)
		}
	}
	e.ownerPtr = saved
	return e.tried(answerSection) > n
}

// resolveTarget asks the forwarder for an ExternalName's target outside the
// zones and appends the answer's records. Without a forwarder, for a
// source not allowed recursion, over MaxConcurrentForwards or when the
// upstream fails, the CNAME stands alone and the client resolves the target
// itself.
func (h *Handler) resolveTarget(st *state, target string, qtype uint16) {
	e := &st.enc
	if h.opts.Forwarder == nil || !h.recursionAllowed(st.src) || e.full[answerSection] {
		return
	}
	if !st.mayBlock {
		st.needSlow = true
		return
	}
	if !h.acquireForward() {
		return
	}
	defer h.releaseForward()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(target), qtype)
	m.RecursionDesired = true
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.ForwardTimeout)
	defer cancel()
	resp, err := h.opts.Forwarder.Resolve(ctx, m)
	if err != nil || resp == nil {
		return
	}
	if resp.Truncated {
		e.tc = true // as CoreDNS: the client retries over TCP
	}
	for _, rr := range resp.Answer {
		start := len(e.buf)
		off, err := dns.PackRR(rr, e.buf[:cap(e.buf)], start, nil, false)
		if err != nil || off > e.limit {
			e.buf = e.buf[:start]
			e.full[answerSection], e.tc = true, true
			return
		}
		e.buf = e.buf[:off]
		e.counts[answerSection]++
	}
}

package server

import (
	"context"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/names"
)

// maxCNAMEs bounds a chain of ExternalName services answered from the
// index, as CoreDNS's does (it follows at most 8 CNAMEs).
const maxCNAMEs = 8

// externalName adds the CNAME of an ExternalName service to target and then
// the target's records of type qtype, as CoreDNS's kubernetes plugin does.
// A target in a served forward zone is answered from the index, and when it
// has no such records the CNAME is taken back too (NODATA, as CoreDNS). Any
// other target ends the chain: the result names it as upstream, for the
// handler to ask the forwarder. depth is the number of CNAMEs already in
// the result; past maxCNAMEs the chain ends without a record.
func (h *Handler) externalName(st *state, target string, qtype uint16, depth int) {
	if depth >= maxCNAMEs {
		return
	}
	before := len(st.res.records)
	h.add(st, record{kind: rrCNAME, ttl: h.opts.TTL, text: target})
	z, ok := h.targetZone(st, target)
	if !ok {
		st.res.upstream = target
		return
	}
	if !h.chase(st, z, qtype, depth+1) {
		st.res.records = st.res.records[:before]
	}
}

// targetZone reads target into st.lw and st.offs and returns the served
// forward zone that holds it. A reverse zone holds no address records, so
// a target there goes upstream, as CoreDNS's would.
func (h *Handler) targetZone(st *state, target string) (*zone, bool) {
	n := names.FromDotted(st.lw[:], target)
	if n < 0 {
		return nil, false
	}
	if st.nl = names.Split(st.lw[:n], st.offs[:]); st.nl < 0 {
		return nil, false
	}
	z, ok := h.zoneOf(st.lw[:n], st.offs[:st.nl])
	if !ok || z.reverse {
		return nil, false
	}
	return z, true
}

// chase adds the qtype records of the name in st.lw, in zone z, which
// depth CNAMEs lead to. It reports whether the name has such records.
func (h *Handler) chase(st *state, z *zone, qtype uint16, depth int) bool {
	nrel := st.nl - z.nlabels
	for i := 0; i < nrel; i++ {
		st.labels[i] = names.Label(st.lw[:], st.offs[:], i)
	}
	req := names.Parse(st.labels[:nrel])
	n := len(st.res.records)
	switch req.Kind {
	case names.NameServer:
		h.special(st, req.Kind, qtype)
	case names.Service, names.Pod:
		var f found
		if rd, ok := h.lookup(st, &req, &f); ok {
			h.nameRecords(st, z, rd, &f, qtype, depth)
		}
	}
	return len(st.res.records) > n
}

// askUpstream asks the forwarder for the records of type qtype of an
// ExternalName's target outside the zones, and appends the answer's
// records to the reply. When the upstream fails or the limit of waiting
// forwards is reached, the CNAME stands alone and the client resolves the
// target itself.
func (h *Handler) askUpstream(e *encoder, target string, qtype uint16, held bool) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(target), qtype)
	m.RecursionDesired = true
	resp, full := h.exchange(m, held)
	if full {
		if mt := h.opts.Metrics; mt != nil {
			mt.forwardsRejected.Inc()
		}
	}
	if resp == nil {
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

// exchange sends m to the forwarder within MaxConcurrentForwards (unless
// the caller holds a token already) and ForwardTimeout; a nil answer means
// none came, and full that m was not sent because MaxConcurrentForwards
// queries were waiting.
func (h *Handler) exchange(m *dns.Msg, held bool) (resp *dns.Msg, full bool) {
	if !held {
		if !h.acquireForward() {
			return nil, true
		}
		defer h.releaseForward()
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.ForwardTimeout)
	defer cancel()
	resp, err := h.opts.Forwarder.Resolve(ctx, m)
	if err != nil {
		return nil, false
	}
	return resp, false
}

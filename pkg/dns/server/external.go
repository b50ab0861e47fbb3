package server

import (
	"context"

	"github.com/miekg/dns"
)

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

package server

import (
	"context"
	"net/netip"

	"github.com/miekg/dns"
)

// askUpstream asks the forwarder for the records of type qtype of an
// ExternalName's target outside the zones, and appends the answer's
// records to the reply. When the upstream fails or the limit of waiting
// forwards is reached, the CNAME stands alone and the client resolves the
// target itself.
func (h *Handler) askUpstream(e *encoder, target string, qtype uint16, held bool, tp int) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(target), qtype)
	m.RecursionDesired = true
	resp, full := h.exchange(m, held, tp)
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

// exchange sends m to the forwarder, for a querier of partition tp,
// within MaxConcurrentForwards (unless the caller holds a token already)
// and ForwardTimeout; a nil answer means none came, and full that m was
// not sent because MaxConcurrentForwards queries were waiting.
func (h *Handler) exchange(m *dns.Msg, held bool, tp int) (resp *dns.Msg, full bool) {
	if !held {
		if !h.acquireForward() {
			return nil, true
		}
		defer h.releaseForward()
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.ForwardTimeout)
	defer cancel()
	var err error
	if pf, ok := h.opts.Forwarder.(PartitionForwarder); ok {
		resp, err = pf.ResolveFor(ctx, tp, m)
	} else {
		resp, err = h.opts.Forwarder.Resolve(ctx, m)
	}
	if err != nil {
		return nil, false
	}
	return resp, false
}

// partitionOf is the partition of the querier of r, which came from src:
// the pod named by r's EDNS Client Subnet option when src is a trusted
// forwarder, else src; SystemPartition for one that is no known pod. Only
// a PartitionForwarder needs it, so other forwarders skip the lookup.
func (h *Handler) partitionOf(src netip.Addr, r *dns.Msg) int {
	if _, ok := h.opts.Forwarder.(PartitionForwarder); !ok {
		return h.opts.SystemPartition
	}
	var c clientSubnet
	if opt := r.IsEdns0(); opt != nil && !readClientSubnet(opt, &c) {
		c = clientSubnet{}
	}
	who := querier{}
	who.addr, _ = h.querierAddr(src, &c)
	h.identify(&who, h.snaps.Current())
	return who.source.TP
}

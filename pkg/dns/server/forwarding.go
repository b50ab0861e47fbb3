package server

import (
	"net/netip"

	"github.com/miekg/dns"
)

// dropped is forward's rcode for a query that got no answer.
const dropped = -1

// forward sends r upstream and relays the answer: to allowed sources only,
// and within MaxConcurrentForwards and the source's budget. A UDP query
// over them is dropped (the rcode is dropped), a TCP one gets SERVFAIL.
func (h *Handler) forward(w dns.ResponseWriter, r *dns.Msg, src netip.Addr, tcp bool) int {
	m := new(dns.Msg)
	refuse := h.opts.Forwarder == nil || !h.recursionAllowed(src)
	if q := r.Question[0].Qtype; q == dns.TypeAXFR || q == dns.TypeIXFR {
		refuse = true
	}
	if refuse {
		m.SetRcode(r, dns.RcodeRefused)
		_ = w.WriteMsg(m)
		return dns.RcodeRefused
	}
	// The fast path admits the UDP queries it hands over, and their token
	// is released when the packet leaves the slow path; others are
	// admitted here.
	if uw, ok := w.(*udpWriter); !ok || !uw.held {
		reason, ok := h.admit(src)
		if !ok {
			return h.refuseForward(w, r, tcp, reason)
		}
		defer h.releaseForward()
	}
	resp, _ := h.exchange(withoutClientSubnet(r), true, h.partitionOf(src, r))
	if resp == nil {
		m.SetRcode(r, dns.RcodeServerFailure)
		_ = w.WriteMsg(m)
		return dns.RcodeServerFailure
	}
	resp.Id = r.Id
	resp.Question = r.Question // keep the query's case
	size := dns.MaxMsgSize
	if !tcp {
		opt := r.IsEdns0()
		size = udpLimit(opt != nil, func() uint16 {
			if opt == nil {
				return 0
			}
			return opt.UDPSize()
		}())
	}
	resp.Truncate(size)
	_ = w.WriteMsg(resp)
	return resp.Rcode
}

// recursionAllowed reports whether src may have names outside the zones
// forwarded.
func (h *Handler) recursionAllowed(src netip.Addr) bool {
	for _, p := range h.opts.AllowRecursion {
		if p.Contains(src) {
			return true
		}
	}
	return false
}

// refuseForward answers a query the bounds keep from the upstreams: over
// UDP not at all, over TCP SERVFAIL.
func (h *Handler) refuseForward(w dns.ResponseWriter, r *dns.Msg, tcp bool, reason dropReason) int {
	if !tcp {
		h.countDrop(reason)
		return dropped
	}
	if m := h.opts.Metrics; m != nil {
		m.forwardsRejected.Inc()
	}
	m := new(dns.Msg)
	m.SetRcode(r, dns.RcodeServerFailure)
	_ = w.WriteMsg(m)
	return dns.RcodeServerFailure
}

// admission is what admitForward decided for a UDP query on the fast path.
type admission uint8

const (
	// admitPass: the query is not to be forwarded (the source may not
	// recurse, or there is no forwarder); the slow path answers it.
	admitPass admission = iota
	// admitHeld: the query holds a forwarding token, released when it
	// leaves the slow path.
	admitHeld
	// admitDropped: the query was dropped and counted.
	admitDropped
)

// admitForward decides, before any copy or goroutine, what becomes of a
// UDP query from src for a name the forwarder answers. A partial one (an
// ExternalName, whose CNAME stands alone) is never dropped: without a
// token, the slow path answers it within MaxConcurrentForwards, the CNAME
// alone over it. It allocates nothing.
func (h *Handler) admitForward(src netip.Addr, partial bool) admission {
	if h.opts.Forwarder == nil || !h.recursionAllowed(src) {
		return admitPass // REFUSED, which waits on nothing
	}
	reason, ok := h.admit(src)
	switch {
	case ok:
		return admitHeld
	case partial:
		return admitPass
	}
	h.countDrop(reason)
	return admitDropped
}

// admit is the rule of admitForward: a query is dropped when
// MaxConcurrentForwards are taken, or when half of them are and its source
// has spent its budget; otherwise it takes a forwarding token, which the
// caller releases (releaseForward). One source asking faster than its
// budget thus holds at most half the pool plus what its budget lets
// through during ForwardTimeout (with the defaults, 500 + 40 + 20 × 5 of
// 1000), so no single client's flood can leave another client without a
// token.
func (h *Handler) admit(src netip.Addr) (dropReason, bool) {
	within := h.budget.take(src)
	if len(h.forwards) >= h.contended && !within {
		return dropSource, false
	}
	if !h.acquireForward() {
		return dropLimit, false
	}
	return 0, true
}

func (h *Handler) countDrop(reason dropReason) {
	if m := h.opts.Metrics; m != nil {
		m.forwardsDropped[reason].Inc()
	}
}

// acquireForward takes a forwarding token without waiting; false means
// MaxConcurrentForwards queries are already waiting upstream.
func (h *Handler) acquireForward() bool {
	select {
	case h.forwards <- struct{}{}:
		return true
	default:
		return false
	}
}

func (h *Handler) releaseForward() { <-h.forwards }

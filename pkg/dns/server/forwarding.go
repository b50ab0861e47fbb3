package server

import (
	"net/netip"

	"github.com/miekg/dns"
)

// forward sends r upstream and relays the answer: to allowed sources only,
// and within MaxConcurrentForwards.
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
	resp, ok := h.exchange(withoutClientSubnet(r))
	if !ok {
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

// acquireForward takes a forwarding token without waiting; false means
// MaxConcurrentForwards queries are already waiting upstream.
func (h *Handler) acquireForward() bool {
	select {
	case h.forwards <- struct{}{}:
		return true
	default:
		if m := h.opts.Metrics; m != nil {
			m.forwardsRejected.Inc()
		}
		return false
	}
}

func (h *Handler) releaseForward() { <-h.forwards }

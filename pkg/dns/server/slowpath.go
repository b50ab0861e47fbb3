package server

import (
	"net"
	"net/netip"

	"github.com/miekg/dns"
)

// offSlowPath hands a packet the fast path does not answer to the slow
// path, in its own goroutine, within the slow path's bound; over it the
// packet gets SERVFAIL at once.
func (h *Handler) offSlowPath(pc *net.UDPConn, pkt []byte, ap netip.AddrPort) {
	select {
	case h.slow <- struct{}{}:
		go func(pkt []byte) {
			defer func() { <-h.slow }()
			h.slowUDP(pc, pkt, ap)
		}(append([]byte(nil), pkt...))
	default:
		// As many packets wait on the slow path as it takes: answer at
		// once rather than queue more goroutines and memory.
		if out := quickReply(pkt, dns.RcodeServerFailure); out != nil {
			_, _ = pc.WriteToUDPAddrPort(out, ap)
		}
		if m := h.opts.Metrics; m != nil {
			m.forwardsRejected.Inc()
		}
	}
}

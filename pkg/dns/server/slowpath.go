package server

import (
	"net"
	"net/netip"
)

// offSlowPath hands a packet the fast path does not answer to the slow
// path, in its own goroutine, within the slow path's bound; over it the
// packet is dropped. held says the packet holds a forwarding token (the
// fast path admitted it, see admitForward), released when it leaves.
func (h *Handler) offSlowPath(pc *net.UDPConn, pkt []byte, ap netip.AddrPort, held bool) {
	select {
	case h.slow <- struct{}{}:
		go func(pkt []byte) {
			defer func() {
				if held {
					h.releaseForward()
				}
				<-h.slow
			}()
			h.slowUDP(pc, pkt, ap, held)
		}(append([]byte(nil), pkt...))
	default:
		if held {
			h.releaseForward()
		}
		// As many packets wait on the slow path as it takes. Dropped
		// rather than answered: a client that asks again at once would
		// keep the server busy answering it (docs/dns.md).
		h.countDrop(dropSlowPath)
	}
}

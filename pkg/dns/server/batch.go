package server

import (
	"errors"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// The batched UDP path (Linux): one goroutine per SO_REUSEPORT socket reads
// up to Options.UDPBatch packets with one recvmmsg, answers the plain
// queries among them as the fast path does, and writes the answers with one
// sendmmsg. Per packet that saves a read and a write through the Go
// netpoller, which is most of what a DNS answer costs beside the lookup.

// batchSupported reports whether ReadBatch and WriteBatch move several
// packets per system call here; elsewhere they move one, and the ordinary
// fast path is as good.
var batchSupported = runtime.GOOS == "linux"

// batchPacketSize is the receive buffer of one batched packet: a DNS query
// is one question and an OPT record, far below it. A longer datagram is
// cut (MSG_TRUNC) and answered FORMERR.
const batchPacketSize = 4096

// batchReplySize is the room for one answer: UDP answers never exceed
// defaultEDNS plus the OPT record and its client subnet option.
const batchReplySize = defaultEDNS + 64

// batchConn is what ipv4.PacketConn and ipv6.PacketConn have in common
// (their Message types are the same).
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

func newBatchConn(pc *net.UDPConn) batchConn {
	if a, ok := pc.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() == nil {
		return ipv6.NewPacketConn(pc)
	}
	return ipv4.NewPacketConn(pc)
}

// msgTrunc is Linux's MSG_TRUNC in a received message's flags.
const msgTrunc = 0x20

// serveUDPBatch answers the queries of pc, batch packets at a time, until
// pc is closed.
func (h *Handler) serveUDPBatch(pc *net.UDPConn, batch int) error {
	conn := newBatchConn(pc)
	in, out := make([]ipv4.Message, batch), make([]ipv4.Message, batch)
	for i := range in {
		in[i].Buffers = [][]byte{make([]byte, batchPacketSize)}
		out[i].Buffers = [][]byte{make([]byte, 0, batchReplySize)}
	}
	replies := make([][]byte, batch) // out[i]'s buffer, full capacity
	for i := range replies {
		replies[i] = out[i].Buffers[0]
	}
	st := &state{buf: make([]byte, 0, dns.MaxMsgSize+512)}
	var q query
	var rep reply
	for {
		n, err := conn.ReadBatch(in, 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			continue
		}
		k := 0
		for i := 0; i < n; i++ {
			m := &in[i]
			ua, _ := m.Addr.(*net.UDPAddr)
			if ua == nil {
				continue
			}
			start := time.Now()
			pkt := m.Buffers[0][:m.N]
			src, _ := netip.AddrFromSlice(ua.IP)
			src = src.Unmap()
			if m.Flags&msgTrunc == 0 && parseQuery(pkt, st, &q) && h.respondQuery(st, &q, src, false, &rep) && rep.out != nil {
				out[k].Buffers[0] = append(replies[k][:0], rep.out...)
				out[k].Addr = m.Addr
				k++
				h.observe(&rep, time.Since(start))
				continue
			}
			h.offSlowPath(pc, pkt, ua.AddrPort())
		}
		for sent := 0; sent < k; {
			w, err := conn.WriteBatch(out[sent:k], 0)
			sent += max(w, 0)
			if err != nil {
				// The answer at sent could not go (its address refused, say):
				// drop it alone, not the rest of the batch.
				sent++
			}
		}
	}
}

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

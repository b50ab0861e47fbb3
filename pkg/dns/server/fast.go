package server

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/miekg/dns"
)

// The UDP fast path reads packets itself instead of through miekg/dns: a
// plain query (one question, uncompressed name, at most an OPT record) for
// an indexed name is answered without unpacking it into a dns.Msg, so it
// allocates nothing. Anything else (forwarded names, odd packets) takes the
// ordinary path: miekg/dns unpacks it and ServeDNS answers, in its own
// goroutine so a slow upstream never blocks the socket.

// parseQuery reads a plain query from b into q and st.qwire. It returns
// false when the packet is not a plain query; the caller falls back.
func parseQuery(b []byte, st *state, q *query) bool {
	if len(b) < headerLen+5 {
		return false
	}
	flags := binary.BigEndian.Uint16(b[2:])
	if flags&0x8000 != 0 || (flags>>11)&0xF != 0 {
		return false
	}
	if binary.BigEndian.Uint16(b[4:]) != 1 || binary.BigEndian.Uint16(b[6:]) != 0 || binary.BigEndian.Uint16(b[8:]) != 0 {
		return false
	}
	ar := binary.BigEndian.Uint16(b[10:])
	if ar > 1 {
		return false
	}
	i := headerLen
	for {
		if i >= len(b) || i-headerLen >= 255 {
			return false
		}
		l := int(b[i])
		if l&0xC0 != 0 {
			return false
		}
		i += 1 + l
		if l == 0 {
			break
		}
	}
	if i+4 > len(b) || i-headerLen > 255 {
		return false
	}
	q.n = copy(st.qwire[:], b[headerLen:i])
	q.id = binary.BigEndian.Uint16(b)
	q.opcode = 0
	q.rd, q.cd = flags&0x0100 != 0, flags&0x0010 != 0
	q.qtype, q.qclass = binary.BigEndian.Uint16(b[i:]), binary.BigEndian.Uint16(b[i+2:])
	i += 4
	q.edns, q.udpSize, q.version, q.do = false, 0, 0, false
	if ar == 1 {
		if i+11 > len(b) || b[i] != 0 || binary.BigEndian.Uint16(b[i+1:]) != dns.TypeOPT {
			return false
		}
		rdlen := int(binary.BigEndian.Uint16(b[i+9:]))
		if i+11+rdlen != len(b) {
			return false
		}
		q.edns = true
		q.udpSize = binary.BigEndian.Uint16(b[i+3:])
		q.version = b[i+6]
		q.do = binary.BigEndian.Uint16(b[i+7:])&0x8000 != 0
		// A malformed option takes the slow path, which answers FORMERR.
		return scanClientSubnet(b[i+11:], &q.ecs)
	}
	q.ecs = clientSubnet{}
	return i == len(b)
}

// serveUDP reads queries from pc until it is closed.
func (h *Handler) serveUDP(pc *net.UDPConn) error {
	buf := make([]byte, 65535)
	st := &state{buf: make([]byte, 0, dns.MaxMsgSize+512)}
	var q query
	var rep reply
	for {
		n, ap, err := pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			continue
		}
		start := time.Now()
		pkt := buf[:n]
		src := ap.Addr().Unmap()
		out, drop, held := h.fastPath(pkt, src, st, &q, &rep)
		switch {
		case out != nil:
			_, _ = pc.WriteToUDPAddrPort(out, ap)
			h.observe(&rep, time.Since(start))
		case !drop:
			h.offSlowPath(pc, pkt, ap, held)
		}
	}
}

// fastPath decides what becomes of one UDP datagram from src, for the
// plain and the batched read loops alike: out, an answer to send at once
// (rep's); or drop, a forward refused before any copy or goroutine; or
// neither, a trip to the slow path, holding a forwarding token if held.
// It allocates nothing.
func (h *Handler) fastPath(pkt []byte, src netip.Addr, st *state, q *query, rep *reply) (out []byte, drop, held bool) {
	if !parseQuery(pkt, st, q) || !h.respondQuery(st, q, src, false, rep) {
		return nil, false, false
	}
	if rep.out != nil {
		return rep.out, false, false
	}
	if !rep.forward {
		return nil, false, false
	}
	switch h.admitForward(src, rep.partial) {
	case admitDropped:
		return nil, true, false
	case admitHeld:
		return nil, false, true
	}
	return nil, false, false
}

// quickReply answers the query in pkt with rcode and its question, straight
// from the wire and without unpacking it; nil when pkt is a response or has
// no header. The question is echoed when it is the only one and
// uncompressed.
func quickReply(pkt []byte, rcode int) []byte {
	if len(pkt) < headerLen || pkt[2]&0x80 != 0 {
		return nil
	}
	out := make([]byte, headerLen, headerLen+260)
	copy(out, pkt[:2])
	out[2] = 0x80 | pkt[2]&0x79 // QR, the opcode and RD
	out[3] = 0x80 | byte(rcode&0xF)
	if binary.BigEndian.Uint16(pkt[4:]) == 1 {
		if end, err := skipName(pkt, headerLen); err == nil && end+4 <= len(pkt) && !compressed(pkt[headerLen:end]) {
			out = append(out, pkt[headerLen:end+4]...)
			out[5] = 1
		}
	}
	return out
}

// compressed reports whether the wire name n ends in a compression
// pointer, so that it cannot be copied on its own.
func compressed(n []byte) bool { return len(n) >= 2 && n[len(n)-2]&0xC0 == 0xC0 }

// slowUDP answers a packet the fast path does not, the way the miekg/dns
// server would: unreadable headers and responses are dropped, other
// unreadable packets get FORMERR.
func (h *Handler) slowUDP(pc *net.UDPConn, pkt []byte, ap netip.AddrPort, held bool) {
	w := &udpWriter{pc: pc, to: ap, held: held}
	if err := validateMessage(pkt); err != nil {
		if out := quickReply(pkt, dns.RcodeFormatError); out != nil {
			_, _ = w.Write(out)
		}
		return
	}
	m := new(dns.Msg)
	if err := m.Unpack(pkt); err != nil {
		if len(pkt) < headerLen || pkt[2]&0x80 != 0 {
			return
		}
		var hdr dns.Msg
		hdr.Id = binary.BigEndian.Uint16(pkt)
		hdr.Response = true
		hdr.Opcode = int(pkt[2]>>3) & 0xF
		hdr.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(&hdr)
		return
	}
	if m.Response {
		return
	}
	if len(m.Question) != 1 {
		r := new(dns.Msg)
		r.SetRcodeFormatError(m)
		_ = w.WriteMsg(r)
		return
	}
	h.ServeDNS(w, m)
}

// udpWriter is the dns.ResponseWriter of the slow path.
type udpWriter struct {
	pc *net.UDPConn
	to netip.AddrPort
	// held says the query holds a forwarding token: the fast path
	// admitted it (Handler.admitForward).
	held bool
}

func (w *udpWriter) LocalAddr() net.Addr { return w.pc.LocalAddr() }
func (w *udpWriter) RemoteAddr() net.Addr {
	return net.UDPAddrFromAddrPort(w.to)
}
func (w *udpWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
func (w *udpWriter) Write(b []byte) (int, error) { return w.pc.WriteToUDPAddrPort(b, w.to) }
func (w *udpWriter) Close() error                { return nil }
func (w *udpWriter) TsigStatus() error           { return nil }
func (w *udpWriter) TsigTimersOnly(bool)         {}
func (w *udpWriter) Hijack()                     {}

// serveFast runs the fast UDP path on every UDP socket, readers goroutines
// each, and miekg/dns on TCP, until ctx ends.
func serveFast(ctx context.Context, l *Listener, h *Handler, readers int) error {
	tcp := tcpServer(l, h)
	errc := make(chan error, 1+len(l.udp)*readers)
	go func() { errc <- tcp.ActivateAndServe() }()
	for _, pc := range l.udp {
		u, ok := pc.(*net.UDPConn)
		if !ok {
			return errors.New("dns: fast path needs UDP sockets")
		}
		if batch := h.opts.UDPBatch; batch > 1 && batchSupported {
			go func() { errc <- h.serveUDPBatch(u, batch) }()
			continue
		}
		for r := 0; r < readers; r++ {
			go func() { errc <- h.serveUDP(u) }()
		}
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	for _, pc := range l.udp {
		_ = pc.Close()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = tcp.ShutdownContext(sctx)
	cancel()
	_ = l.tcp.Close() // in case the shutdown landed before the TCP server started
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

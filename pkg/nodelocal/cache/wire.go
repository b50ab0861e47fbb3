package cache

import (
	"encoding/binary"
	"errors"

	"github.com/miekg/dns"
)

// An entry keeps its answer packed twice, without and with an OPT record, so
// a hit is a copy of bytes with the ID, flags, question spelling and TTLs
// patched in: no records are copied or packed on the hot path. Anything the
// templates cannot express (a reply larger than the client takes over UDP,
// an extended RCODE) falls back to building the message.
type template struct {
	wire []byte
	ttls []int // offsets of the TTL fields of every record but OPT
	qEnd int   // offset just past the question name
}

var errShort = errors.New("packed message too short")

func buildTemplate(e *Entry, edns bool) *template {
	if e.Rcode > 0xf {
		return nil
	}
	m := new(dns.Msg)
	m.Response = true
	m.RecursionAvailable = true
	m.Rcode = e.Rcode
	m.Compress = true
	m.Question = []dns.Question{{Name: e.name, Qtype: e.qtype, Qclass: e.qclass}}
	m.Answer, m.Ns, m.Extra = e.Answer, e.Ns, e.Extra
	if edns {
		m.SetEdns0(1232, e.do)
	}
	wire, err := m.Pack()
	if err != nil {
		return nil
	}
	qEnd, ttls, err := ttlOffsets(wire)
	if err != nil {
		return nil
	}
	return &template{wire: wire, ttls: ttls, qEnd: qEnd}
}

// ttlOffsets walks a packed message and returns where the question name
// ends and the offsets of the TTLs of its records, OPT excluded.
func ttlOffsets(msg []byte) (qEnd int, ttls []int, err error) {
	if len(msg) < 12 {
		return 0, nil, errShort
	}
	qd := int(binary.BigEndian.Uint16(msg[4:]))
	rr := int(binary.BigEndian.Uint16(msg[6:])) + int(binary.BigEndian.Uint16(msg[8:])) + int(binary.BigEndian.Uint16(msg[10:]))
	off := 12
	for i := 0; i < qd; i++ {
		if off, err = skipName(msg, off); err != nil {
			return 0, nil, err
		}
		if i == 0 {
			qEnd = off
		}
		off += 4
	}
	for i := 0; i < rr; i++ {
		if off, err = skipName(msg, off); err != nil {
			return 0, nil, err
		}
		if off+10 > len(msg) {
			return 0, nil, errShort
		}
		if binary.BigEndian.Uint16(msg[off:]) != dns.TypeOPT {
			ttls = append(ttls, off+4)
		}
		off += 10 + int(binary.BigEndian.Uint16(msg[off+8:]))
	}
	if off > len(msg) || qd != 1 {
		return 0, nil, errShort
	}
	return qEnd, ttls, nil
}

func skipName(msg []byte, off int) (int, error) {
	for {
		if off >= len(msg) {
			return 0, errShort
		}
		c := int(msg[off])
		switch {
		case c == 0:
			return off + 1, nil
		case c&0xc0 == 0xc0:
			if off+2 > len(msg) {
				return 0, errShort
			}
			return off + 2, nil
		case c&0xc0 != 0:
			return 0, errors.New("bad label type")
		default:
			off += c + 1
		}
	}
}

// writeFast answers req from e's template; it returns false when the
// template does not fit and the caller must build the answer.
func (h *Handler) writeFast(w dns.ResponseWriter, req *dns.Msg, e *Entry, ttl uint32, udp bool) bool {
	tpl, limit := e.plain, dns.MinMsgSize
	if opt := req.IsEdns0(); opt != nil {
		tpl = e.edns
		if s := int(opt.UDPSize()); s > limit {
			limit = min(s, 1232)
		}
	}
	if tpl == nil || (udp && len(tpl.wire) > limit) {
		return false
	}
	bp := h.bufs.Get().(*[]byte)
	buf := append((*bp)[:0], tpl.wire...)
	binary.BigEndian.PutUint16(buf, req.Id)
	// Flags: the template's QR, RA and RCODE; RD and CD as asked.
	if req.RecursionDesired {
		buf[2] |= 0x01
	}
	if req.CheckingDisabled {
		buf[3] |= 0x10
	}
	// The question as the client spelled it (same length: it matched the
	// entry case-insensitively).
	if end, err := dns.PackDomainName(req.Question[0].Name, buf, 12, nil, false); err != nil || end != tpl.qEnd {
		*bp = buf
		h.bufs.Put(bp)
		return false
	}
	for _, off := range tpl.ttls {
		binary.BigEndian.PutUint32(buf[off:], ttl)
	}
	_, _ = w.Write(buf)
	*bp = buf
	h.bufs.Put(bp)
	return true
}

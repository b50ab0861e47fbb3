package upstream

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

// AppendReply appends to dst the answer to req from e's packed templates,
// with every record's TTL set to ttl: the template's bytes with the ID,
// the RD and CD flags and the question's spelling patched in. It reports
// false, and the caller builds the answer itself, when there is no template
// for the request (an extended RCODE) or the answer exceeds limit, the
// most the client takes.
func (e *Entry) AppendReply(dst []byte, req *dns.Msg, ttl uint32, limit int) ([]byte, bool) {
	tpl := e.plain
	if req.IsEdns0() != nil {
		tpl = e.edns
	}
	if tpl == nil || len(tpl.wire) > limit {
		return dst, false
	}
	start := len(dst)
	buf := append(dst, tpl.wire...)
	out := buf[start:]
	binary.BigEndian.PutUint16(out, req.Id)
	// Flags: the template's QR, RA and RCODE; RD and CD as asked.
	if req.RecursionDesired {
		out[2] |= 0x01
	}
	if req.CheckingDisabled {
		out[3] |= 0x10
	}
	// The question as the client spelled it (same length: it matched the
	// entry case-insensitively).
	if end, err := dns.PackDomainName(req.Question[0].Name, out, 12, nil, false); err != nil || end != tpl.qEnd {
		return buf[:start], false
	}
	for _, off := range tpl.ttls {
		binary.BigEndian.PutUint32(out[off:], ttl)
	}
	return buf, true
}

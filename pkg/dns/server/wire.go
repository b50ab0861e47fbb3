package server

import (
	"encoding/binary"
	"net/netip"
	"strings"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
)

// Wire-format constants used by the encoder.
const (
	typeA     = 1
	typeNS    = 2
	typeCNAME = 5
	typeSOA   = 6
	typePTR   = 12
	typeTXT   = 16
	typeAAAA  = 28
	typeSRV   = 33
	typeOPT   = 41
	classIN   = 1

	headerLen = 12
	// qPointer is a compression pointer to the question name, which always
	// starts right after the header. Owner names written this way keep the
	// case of the query.
	qPointer = 0xC000 | headerLen
)

type section uint8

const (
	answerSection section = iota
	authoritySection
	extraSection
)

// encoder writes a response straight into a buffer. Records that do not fit
// the size limit are dropped; a dropped answer or authority record sets TC.
type encoder struct {
	buf    []byte
	limit  int
	counts [3]uint16
	// dropped counts the records of each section that did not fit.
	dropped [3]uint16
	full    [3]bool
	tc      bool
	// ownerPtr is the compression pointer that owner writes: the question
	// name, or the target of the CNAME being followed.
	ownerPtr uint16
}

func (e *encoder) reset(buf []byte, limit int) {
	e.buf, e.limit = buf[:0], limit
	e.counts, e.dropped, e.full, e.tc = [3]uint16{}, [3]uint16{}, [3]bool{}, false
	e.ownerPtr = qPointer
}

// mark is what rollback needs to take back the records written (or
// dropped) after it.
type mark struct {
	n               int
	counts, dropped [3]uint16
	full            [3]bool
	tc              bool
}

func (e *encoder) mark() mark { return mark{len(e.buf), e.counts, e.dropped, e.full, e.tc} }

func (e *encoder) rollback(m mark) {
	e.buf, e.counts, e.dropped, e.full, e.tc = e.buf[:m.n], m.counts, m.dropped, m.full, m.tc
}

// tried is the number of records of section sec written or dropped.
func (e *encoder) tried(sec section) int { return int(e.counts[sec]) + int(e.dropped[sec]) }

// pointerTo is the compression pointer to offset off, if a pointer can
// reach it.
func pointerTo(off int) (uint16, bool) {
	if off >= 0x4000 {
		return 0, false
	}
	return uint16(0xC000 | off), true
}

func (e *encoder) u16(v uint16) { e.buf = binary.BigEndian.AppendUint16(e.buf, v) }
func (e *encoder) u32(v uint32) { e.buf = binary.BigEndian.AppendUint32(e.buf, v) }

// header writes the header with zero counts; finish fills the counts in.
func (e *encoder) header(id, flags uint16) {
	e.u16(id)
	e.u16(flags)
	e.buf = append(e.buf, 0, 1, 0, 0, 0, 0, 0, 0)
}

func (e *encoder) question(name []byte, qtype, qclass uint16) {
	e.buf = append(e.buf, name...)
	e.u16(qtype)
	e.u16(qclass)
}

// label writes one label; names from the API are valid DNS labels, and a
// longer one is cut rather than corrupting the packet.
func (e *encoder) label(s string) {
	if len(s) > 63 {
		s = s[:63]
	}
	e.buf = append(e.buf, byte(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *encoder) labelBytes(s []byte) {
	if len(s) > 63 {
		s = s[:63]
	}
	e.buf = append(e.buf, byte(len(s)))
	e.buf = append(e.buf, s...)
}

// hostLabel writes an endpoint's DNS label, made in place when it is its
// address's.
func (e *encoder) hostLabel(ep *index.EndpointView) {
	var buf [64]byte
	e.labelBytes(ep.AppendHost(buf[:0]))
}

// fqdn writes a dotted name such as an ExternalName target.
func (e *encoder) fqdn(s string) {
	s = strings.TrimSuffix(s, ".")
	for s != "" {
		i := strings.IndexByte(s, '.')
		if i < 0 {
			e.label(s)
			break
		}
		if i > 0 {
			e.label(s[:i])
		}
		s = s[i+1:]
	}
	e.buf = append(e.buf, 0)
}

// rr is an open record: begin writes the owner, type, class and TTL and
// leaves room for the RDATA length, end fills it in or drops the record.
type rr struct {
	start, rdlen int
	sec          section
	ok           bool
}

func (e *encoder) begin(sec section) rr {
	return rr{start: len(e.buf), sec: sec, ok: !e.full[sec]}
}

// owner writes the owner name of the record being written: the question
// name unless a CNAME is being followed (ownerPtr).
func (e *encoder) owner() { e.u16(e.ownerPtr) }

func (e *encoder) typ(t uint16, ttl uint32) int {
	e.u16(t)
	e.u16(classIN)
	e.u32(ttl)
	e.u16(0)
	return len(e.buf)
}

func (e *encoder) end(r rr, rdStart int) bool {
	if !r.ok || len(e.buf) > e.limit || len(e.buf)-rdStart > 0xFFFF {
		e.drop(r)
		return false
	}
	binary.BigEndian.PutUint16(e.buf[rdStart-2:], uint16(len(e.buf)-rdStart))
	e.counts[r.sec]++
	return true
}

// drop takes back the open record r, which does not fit (or its section is
// full already): the section is full from then on, and a dropped answer or
// authority record sets TC.
func (e *encoder) drop(r rr) {
	e.buf = e.buf[:r.start]
	e.dropped[r.sec]++
	if r.ok {
		e.full[r.sec] = true
		if r.sec != extraSection {
			e.tc = true
		}
	}
}

// addr writes an A or AAAA record for a.
func (e *encoder) addr(r rr, a netip.Addr, ttl uint32) bool {
	if a.Is4() {
		rd := e.typ(typeA, ttl)
		b := a.As4()
		e.buf = append(e.buf, b[:]...)
		return e.end(r, rd)
	}
	rd := e.typ(typeAAAA, ttl)
	b := a.As16()
	e.buf = append(e.buf, b[:]...)
	return e.end(r, rd)
}

// opt writes the EDNS0 OPT record, with the query's client subnet option
// ecs (when present) at scope prefix scope; the space for it is reserved
// by limit.
func (e *encoder) opt(udpSize uint16, extRcode uint8, do bool, ecs *clientSubnet, scope uint8) {
	e.buf = append(e.buf, 0)
	e.u16(typeOPT)
	e.u16(udpSize)
	var flags uint16
	if do {
		flags = 0x8000
	}
	e.buf = append(e.buf, extRcode, 0)
	e.u16(flags)
	e.u16(uint16(ecs.wireLen()))
	if ecs.present {
		e.buf = appendClientSubnet(e.buf, ecs, scope)
	}
	e.counts[extraSection]++
}

func (e *encoder) finish(rcode int) []byte {
	flags := binary.BigEndian.Uint16(e.buf[2:])
	flags = flags&^0xF | uint16(rcode&0xF)
	if e.tc {
		flags |= 1 << 9
	}
	binary.BigEndian.PutUint16(e.buf[2:], flags)
	binary.BigEndian.PutUint16(e.buf[6:], e.counts[answerSection])
	binary.BigEndian.PutUint16(e.buf[8:], e.counts[authoritySection])
	binary.BigEndian.PutUint16(e.buf[10:], e.counts[extraSection])
	return e.buf
}

package server

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/names"
)

type zone struct {
	name    string
	wire    []byte // lowercase, with the root label
	nlabels int
	reverse bool
}

// Handler is a dns.Handler for the cluster zones.
type Handler struct {
	opts    Options
	snaps   Snapshots
	zones   []zone
	primary int
	synced  atomic.Bool
	pool    sync.Pool
	// forwards holds a token per query waiting on an upstream, slow one per
	// packet on the UDP slow path: the forwards plus slowPathSpare others
	// (cache hits, malformed packets), so that a flood of forwards holds
	// at most that many goroutines.
	forwards, slow chan struct{}
}

// slowPathSpare is how many UDP packets may be on the slow path besides
// those waiting upstream.
const slowPathSpare = 64

// New returns a Handler reading snapshots from snaps.
func New(snaps Snapshots, o Options) (*Handler, error) {
	h := &Handler{opts: o, snaps: snaps, primary: -1}
	if h.opts.ForwardTimeout == 0 {
		h.opts.ForwardTimeout = 5 * time.Second
	}
	if h.opts.MaxConcurrentForwards <= 0 {
		h.opts.MaxConcurrentForwards = DefaultMaxConcurrentForwards
	}
	if h.opts.AllowRecursion == nil {
		h.opts.AllowRecursion = DefaultAllowRecursion
	}
	h.forwards = make(chan struct{}, h.opts.MaxConcurrentForwards)
	h.slow = make(chan struct{}, h.opts.MaxConcurrentForwards+slowPathSpare)
	for _, z := range o.Zones {
		fq := dns.CanonicalName(z)
		if _, ok := dns.IsDomainName(fq); !ok || fq == "." {
			return nil, &net.ParseError{Type: "zone", Text: z}
		}
		var buf [256]byte
		n, err := dns.PackDomainName(fq, buf[:], 0, nil, false)
		if err != nil {
			return nil, err
		}
		rev := dns.IsSubDomain("in-addr.arpa.", fq) || dns.IsSubDomain("ip6.arpa.", fq)
		h.zones = append(h.zones, zone{name: fq, wire: append([]byte(nil), buf[:n]...), nlabels: dns.CountLabel(fq), reverse: rev})
		if !rev && h.primary < 0 {
			h.primary = len(h.zones) - 1
		}
	}
	if len(h.zones) == 0 {
		return nil, &net.ParseError{Type: "zone", Text: "(none)"}
	}
	h.pool.New = func() any { return &state{buf: make([]byte, 0, dns.MaxMsgSize+512), mayBlock: true} }
	return h, nil
}

// MarkSynced ends the SERVFAIL-before-sync period.
func (h *Handler) MarkSynced() { h.synced.Store(true) }

// Synced reports whether MarkSynced was called.
func (h *Handler) Synced() bool { return h.synced.Load() }

// state is one query's scratch space, pooled.
type state struct {
	qwire  [names.MaxWire]byte
	lw     [names.MaxWire]byte
	offs   [128]uint8
	labels [128][]byte
	enc    encoder
	buf    []byte
	nl     int
	// mayBlock is false on the UDP fast path, which must not wait for an
	// upstream; an answer that would (an ExternalName's target) sets
	// needSlow and is redone on the ordinary path.
	mayBlock bool
	needSlow bool
	// src is the querier's address; source and known what the index says
	// of it (see answer).
	src    netip.Addr
	source index.Source
	known  bool
	// addrs is scratch space for the addresses of ns.dns.<zone>.
	addrs []netip.Addr
}

// ServeDNS implements dns.Handler.
func (h *Handler) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	start := time.Now()
	src, tcp := clientOf(w.RemoteAddr())
	st := h.pool.Get().(*state)
	out, zi, rcode, qtype := h.respond(st, r, src, tcp)
	if out != nil {
		_, _ = w.Write(out)
	} else if zi == forwarded {
		rcode = h.forward(w, r, src, tcp)
	}
	h.pool.Put(st)
	if m := h.opts.Metrics; m != nil {
		zname := "."
		if zi >= 0 {
			zname = h.zones[zi].name
		}
		m.observe(zi+1, zname, qtype, rcode, time.Since(start))
	}
}

const (
	forwarded = -1
	malformed = -2
)

func clientOf(a net.Addr) (netip.Addr, bool) {
	switch a := a.(type) {
	case *net.UDPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap(), false
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap(), true
	}
	return netip.Addr{}, false
}

// Respond answers r as the server would for a client at src, without a
// socket; it returns the packed response, or nil when the name is to be
// forwarded. It exists for tests, fuzzing and benchmarks.
func (h *Handler) Respond(r *dns.Msg, src netip.Addr, tcp bool) []byte {
	st := h.pool.Get().(*state)
	defer h.pool.Put(st)
	out, _, _, _ := h.respond(st, r, src, tcp)
	if out == nil {
		return nil
	}
	return append([]byte(nil), out...)
}

// query is what the answer needs of a request, read either from a
// miekg/dns message or straight from the packet (see fast.go).
type query struct {
	id            uint16
	opcode        int
	rd, cd        bool
	qtype, qclass uint16
	n             int // length of the question name in state.qwire
	edns          bool
	udpSize       uint16
	version       uint8
	do            bool
}

// respond builds the answer to r in st. It returns the zone index, or
// forwarded when the name is not ours, or malformed.
func (h *Handler) respond(st *state, r *dns.Msg, src netip.Addr, tcp bool) ([]byte, int, int, uint16) {
	if len(r.Question) != 1 {
		return h.formErr(st, r), malformed, dns.RcodeFormatError, 0
	}
	if r.Opcode != dns.OpcodeQuery {
		// NOTIFY, UPDATE and the rest are not served, nor forwarded.
		return h.reply(st, r, dns.RcodeNotImplemented), malformed, dns.RcodeNotImplemented, r.Question[0].Qtype
	}
	q := query{id: r.Id, opcode: r.Opcode, rd: r.RecursionDesired, cd: r.CheckingDisabled, qtype: r.Question[0].Qtype, qclass: r.Question[0].Qclass}
	n, err := dns.PackDomainName(r.Question[0].Name, st.qwire[:], 0, nil, false)
	if err != nil || n > names.MaxWire {
		return h.formErr(st, r), malformed, dns.RcodeFormatError, q.qtype
	}
	q.n = n
	if opt := r.IsEdns0(); opt != nil {
		q.edns, q.udpSize, q.version, q.do = true, opt.UDPSize(), opt.Version(), opt.Do()
	}
	out, zi, rcode := h.respondQuery(st, &q, src, tcp)
	if zi == malformed {
		return h.formErr(st, r), malformed, dns.RcodeFormatError, q.qtype
	}
	return out, zi, rcode, q.qtype
}

// respondQuery answers q, whose name is in st.qwire. A nil answer means the
// name is to be forwarded (zi == forwarded) or is malformed.
func (h *Handler) respondQuery(st *state, q *query, src netip.Addr, tcp bool) ([]byte, int, int) {
	n := q.n
	if names.Lower(st.lw[:], st.qwire[:n]) != n {
		return nil, malformed, dns.RcodeFormatError
	}
	st.nl = names.Split(st.lw[:n], st.offs[:])
	if st.nl < 0 {
		return nil, malformed, dns.RcodeFormatError
	}
	zi := h.zoneOf(st.lw[:n], st.offs[:st.nl])
	if zi < 0 {
		return nil, forwarded, 0
	}
	limit := udpLimit(q.edns, q.udpSize)
	if tcp {
		limit = dns.MaxMsgSize
	}
	if q.edns {
		limit -= 11 // room for our OPT record
	}
	e := &st.enc
	e.reset(st.buf, limit)
	flags := uint16(1<<15) | uint16(q.opcode&0xF)<<11 | 1<<10 | 1<<7 // QR, AA, RA
	if q.rd {
		flags |= 1 << 8
	}
	if q.cd {
		flags |= 1 << 4
	}
	e.header(q.id, flags)
	e.question(st.qwire[:n], q.qtype, q.qclass)
	var rcode int
	var ext uint8
	switch {
	case q.edns && q.version != 0:
		rcode, ext = 0, 1 // BADVERS: extended rcode 16
	case q.opcode != dns.OpcodeQuery:
		rcode = dns.RcodeNotImplemented
	default:
		st.needSlow = false
		rcode = h.answer(st, zi, q.qtype, q.qclass, src)
		if rcode == rcodeForward || st.needSlow {
			return nil, forwarded, 0
		}
	}
	if q.edns {
		e.limit += 11
		e.opt(defaultEDNS, ext, q.do)
		if ext != 0 {
			rcode = dns.RcodeBadVers
		}
	}
	return e.finish(rcode), zi, rcode
}

// udpLimit is the largest UDP answer to a query: 512 bytes without EDNS, the
// client's payload size with it, never more than defaultEDNS.
func udpLimit(edns bool, size uint16) int {
	if !edns || int(size) <= dns.MinMsgSize {
		return dns.MinMsgSize
	}
	if int(size) > defaultEDNS {
		return defaultEDNS
	}
	return int(size)
}

func (h *Handler) formErr(st *state, r *dns.Msg) []byte {
	return h.reply(st, r, dns.RcodeFormatError)
}

// reply is an answer to r with rcode and nothing but r's question.
func (h *Handler) reply(st *state, r *dns.Msg, rcode int) []byte {
	m := new(dns.Msg)
	m.SetRcode(r, rcode)
	if rcode == dns.RcodeFormatError {
		m.SetRcodeFormatError(r)
	}
	b, err := m.PackBuffer(st.buf[:0])
	if err != nil {
		return nil
	}
	return b
}

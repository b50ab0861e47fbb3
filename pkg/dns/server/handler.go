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

// Handler is a dns.Handler for the cluster zones.
type Handler struct {
	opts  Options
	snaps Snapshots
	zones []zone
	// primary is the first forward zone, the one PTR records point into;
	// nil when every zone is a reverse one.
	primary *zone
	synced  atomic.Bool
	pool    sync.Pool
	// forwards holds a token per query waiting on an upstream, slow one per
	// packet on the UDP slow path: the forwards plus slowPathSpare others
	// (cache hits, malformed packets), so that a flood of forwards holds
	// at most that many goroutines.
	forwards, slow chan struct{}
	// contended is how many forwards waiting upstream make the pool
	// contended: from then on each source keeps to its budget.
	contended int
	budget    *sourceBudget
	// waiting is how many queries wait for the index to learn their pod
	// (awaitSource).
	waiting atomic.Int64
}

// slowPathSpare is how many UDP packets may be on the slow path besides
// those waiting upstream.
const slowPathSpare = 64

// learnPoll is how often a query from an unknown pod looks for its pod in
// the index's newest snapshot (Options.UnknownPodWait).
const learnPoll = 20 * time.Millisecond

// mayLearn reports whether a query from the unknown querier a may wait for
// the index to learn it: a is in Options.PodCIDRs and waiting is on.
func (h *Handler) mayLearn(a netip.Addr) bool {
	if h.opts.UnknownPodWait <= 0 {
		return false
	}
	for _, p := range h.opts.PodCIDRs {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// awaitSource waits until the index knows the querier at a, or
// Options.UnknownPodWait has passed, and reports whether it knows it.
func (h *Handler) awaitSource(a netip.Addr) bool {
	h.waiting.Add(1)
	defer h.waiting.Add(-1)
	deadline := time.Now().Add(h.opts.UnknownPodWait)
	for {
		if _, ok := h.snaps.Current().Source(a); ok {
			h.opts.Metrics.unknownPodWait(true)
			return true
		}
		if !time.Now().Before(deadline) {
			h.opts.Metrics.unknownPodWait(false)
			return false
		}
		time.Sleep(learnPoll)
	}
}

// New returns a Handler reading snapshots from snaps.
func New(snaps Snapshots, o Options) (*Handler, error) {
	h := &Handler{opts: o, snaps: snaps}
	if h.opts.ForwardTimeout == 0 {
		h.opts.ForwardTimeout = 5 * time.Second
	}
	if h.opts.MaxConcurrentForwards <= 0 {
		h.opts.MaxConcurrentForwards = DefaultMaxConcurrentForwards
	}
	if h.opts.AllowRecursion == nil {
		h.opts.AllowRecursion = DefaultAllowRecursion
	}
	if h.opts.ForwardsPerSource <= 0 {
		h.opts.ForwardsPerSource = DefaultForwardsPerSource
	}
	if h.opts.ForwardBurstPerSource <= 0 {
		h.opts.ForwardBurstPerSource = int(max(1, 2*h.opts.ForwardsPerSource))
	}
	h.forwards = make(chan struct{}, h.opts.MaxConcurrentForwards)
	h.contended = h.opts.MaxConcurrentForwards / 2
	h.budget = newSourceBudget(h.opts.ForwardsPerSource, h.opts.ForwardBurstPerSource)
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
		h.zones = append(h.zones, zone{name: fq, wire: append([]byte(nil), buf[:n]...), nlabels: dns.CountLabel(fq), reverse: rev, slot: len(h.zones) + 1})
	}
	if len(h.zones) == 0 {
		return nil, &net.ParseError{Type: "zone", Text: "(none)"}
	}
	for i := range h.zones {
		if !h.zones[i].reverse {
			h.primary = &h.zones[i]
			break
		}
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
	// upstream: an answer that needs one (an ExternalName's target) is
	// redone on the ordinary path.
	mayBlock bool
	// The resolver's: the index snapshot, the querier and the result.
	snap *index.Snapshot
	who  querier
	res  result
	// cname is the target of the CNAME last added to the result, for the
	// resolver to follow (followTargets).
	cname string
	// recs, addrs and ptrs are scratch space for the result's records, the
	// addresses of ns.dns.<zone> and the owners of a PTR query's address,
	// kept between queries.
	recs  []record
	addrs []netip.Addr
	ptrs  []index.PTR
	// held says the query holds a forwarding token already (admitted on
	// the fast path, see admitForward).
	held bool
}

// ServeDNS implements dns.Handler.
func (h *Handler) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	start := time.Now()
	src, tcp := clientOf(w.RemoteAddr())
	st := h.pool.Get().(*state)
	uw, _ := w.(*udpWriter)
	st.held = uw != nil && uw.held
	var rep reply
	h.respond(st, r, src, tcp, &rep)
	if rep.forward {
		rep.rcode = h.forward(w, r, src, tcp)
	} else if rep.out != nil {
		_, _ = w.Write(rep.out)
	}
	h.pool.Put(st)
	if rep.rcode != dropped { // counted in tpkit_dns_forward_dropped_total
		h.observe(&rep, time.Since(start))
	}
}

// reply is the outcome of one request: the packed answer, or the word to
// forward it, and what the metrics count.
type reply struct {
	// out is the answer; nil when forward is set (or packing failed).
	out []byte
	// forward says the request goes to the upstreams as it is; partial
	// that it has an answer of its own (an ExternalName's CNAME) that
	// stands without the upstream's.
	forward, partial bool
	// zone is the zone of the question; nil for names outside the zones
	// and for malformed requests.
	zone  *zone
	rcode int
	qtype uint16
	// scope is the ECS scope prefix of the answer: the query's source
	// prefix when the answer depended on the identity its ECS option gave.
	scope uint8
}

// observe counts a reply in the metrics.
func (h *Handler) observe(rep *reply, d time.Duration) {
	m := h.opts.Metrics
	if m == nil {
		return
	}
	if rep.zone == nil {
		m.observe(0, ".", rep.qtype, rep.rcode, d)
		return
	}
	m.observe(rep.zone.slot, rep.zone.name, rep.qtype, rep.rcode, d)
}

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
	st.held = false
	var rep reply
	h.respond(st, r, src, tcp, &rep)
	if rep.forward || rep.out == nil {
		return nil
	}
	return append([]byte(nil), rep.out...)
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
	// ecs is the query's EDNS Client Subnet option (clientsubnet.go).
	ecs clientSubnet
}

// respond answers r in st, into rep.
func (h *Handler) respond(st *state, r *dns.Msg, src netip.Addr, tcp bool, rep *reply) {
	if len(r.Question) != 1 {
		*rep = reply{out: h.formErr(st, r), rcode: dns.RcodeFormatError}
		return
	}
	qtype := r.Question[0].Qtype
	if r.Opcode != dns.OpcodeQuery {
		// NOTIFY, UPDATE and the rest are not served, nor forwarded.
		*rep = reply{out: h.reply(st, r, dns.RcodeNotImplemented), rcode: dns.RcodeNotImplemented, qtype: qtype}
		return
	}
	q := query{id: r.Id, opcode: r.Opcode, rd: r.RecursionDesired, cd: r.CheckingDisabled, qtype: qtype, qclass: r.Question[0].Qclass}
	n, err := dns.PackDomainName(r.Question[0].Name, st.qwire[:], 0, nil, false)
	if err != nil || n > names.MaxWire {
		*rep = reply{out: h.formErr(st, r), rcode: dns.RcodeFormatError, qtype: qtype}
		return
	}
	q.n = n
	if opt := r.IsEdns0(); opt != nil {
		q.edns, q.udpSize, q.version, q.do = true, opt.UDPSize(), opt.Version(), opt.Do()
		if !readClientSubnet(opt, &q.ecs) {
			*rep = reply{out: h.formErr(st, r), rcode: dns.RcodeFormatError, qtype: qtype}
			return
		}
	}
	if !h.respondQuery(st, &q, src, tcp, rep) {
		*rep = reply{out: h.formErr(st, r), rcode: dns.RcodeFormatError, qtype: qtype}
	}
}

// respondQuery answers q, whose name is in st.qwire, into rep: it reads
// the name, resolves it and renders the result. It reports false when the
// name is malformed.
func (h *Handler) respondQuery(st *state, q *query, src netip.Addr, tcp bool, rep *reply) bool {
	n := q.n
	if !st.readQuestion(n) {
		return false
	}
	z, ok := h.zoneOf(st.lw[:n], st.offs[:st.nl])
	*rep = reply{zone: z, qtype: q.qtype}
	if !ok {
		rep.forward = true
		return true
	}
	var res *result
	switch {
	case q.edns && q.version != 0:
		rep.rcode = dns.RcodeBadVers
	case q.opcode != dns.OpcodeQuery:
		rep.rcode = dns.RcodeNotImplemented
	default:
		who, fromECS := h.querierAddr(src, &q.ecs)
		res = h.resolve(st, z, q.qtype, q.qclass, who)
		if res.unsure && h.mayLearn(who) {
			if !st.mayBlock {
				// The fast path must not wait: neither an answer nor a
				// forward sends the query to the slow path, which may.
				return true
			}
			if h.awaitSource(who) {
				// resolve may have read an ExternalName's targets
				// over the question's name.
				st.readQuestion(n)
				res = h.resolve(st, z, q.qtype, q.qclass, who)
			}
		}
		if fromECS && res.identity {
			rep.scope = q.ecs.source // the answer is this client's alone
		}
		if res.outcome == forwarded {
			rep.forward = true
			return true
		}
		if res.upstream != "" && h.opts.Forwarder != nil && h.recursionAllowed(src) && !st.mayBlock {
			// The fast path must not wait for the upstream.
			rep.forward, rep.partial = true, true
			return true
		}
		rep.rcode = res.outcome.rcode()
	}
	rep.out = h.write(st, q, res, rep.rcode, rep.scope, src, tcp)
	return true
}

// readQuestion reads the question's name, st.qwire[:n], into st.lw in
// lowercase and splits it at st.offs. It reports false when the name is
// malformed.
func (st *state) readQuestion(n int) bool {
	if names.Lower(st.lw[:], st.qwire[:n]) != n {
		return false
	}
	st.nl = names.Split(st.lw[:n], st.offs[:])
	return st.nl >= 0
}

// write renders res, the answer to q, into st's buffer: the header and the
// question, the records, the upstream's records of an ExternalName target,
// and the OPT record (with the query's ECS option at scope prefix scope).
// A nil res is an answer with no records.
func (h *Handler) write(st *state, q *query, res *result, rcode int, scope uint8, src netip.Addr, tcp bool) []byte {
	limit := udpLimit(q.edns, q.udpSize)
	if tcp {
		limit = dns.MaxMsgSize
	}
	if q.edns {
		limit -= 11 + q.ecs.wireLen() // room for our OPT record
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
	e.question(st.qwire[:q.n], q.qtype, q.qclass)
	if res != nil {
		h.render(e, res)
		if res.upstream != "" && h.opts.Forwarder != nil && h.recursionAllowed(src) && !e.full[answerSection] {
			tp := h.opts.SystemPartition
			if _, ok := h.opts.Forwarder.(PartitionForwarder); ok {
				h.identify(&st.who, st.snap)
				tp = st.who.source.TP
			}
			h.askUpstream(e, res.upstream, q.qtype, st.held, tp)
		}
	}
	if q.edns {
		e.limit += 11 + q.ecs.wireLen()
		var ext uint8
		if rcode == dns.RcodeBadVers {
			ext = 1 // BADVERS is extended rcode 16: 1 in the OPT, 0 in the header
		}
		e.opt(defaultEDNS, ext, q.do, &q.ecs, scope)
	}
	return e.finish(rcode)
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

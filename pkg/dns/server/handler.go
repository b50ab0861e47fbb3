package server

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/names"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// PodMode is how pod names are answered, as in CoreDNS's "pods" option.
type PodMode uint8

const (
	// PodsDisabled answers no pod names (NXDOMAIN).
	PodsDisabled PodMode = iota
	// PodsInsecure answers any well-formed a-b-c-d name in an existing
	// namespace with the address it spells.
	PodsInsecure
	// PodsVerified answers only addresses of pods in that namespace.
	PodsVerified
)

// ParsePodMode reads "disabled", "insecure" or "verified".
func ParsePodMode(s string) (PodMode, bool) {
	switch s {
	case "disabled":
		return PodsDisabled, true
	case "insecure":
		return PodsInsecure, true
	case "verified":
		return PodsVerified, true
	}
	return 0, false
}

// DNSSchemaVersion is the TXT answer for dns-version.<zone>, the version of
// the Kubernetes DNS specification that is implemented.
const DNSSchemaVersion = "1.1.0"

const (
	dnsVersionTTL = 28800
	maxSOATTL     = 300
	// defaultEDNS is the UDP payload size advertised in answers, and the
	// largest UDP answer sent whatever the client asks (DNS Flag Day 2020):
	// larger answers are truncated and the client retries over TCP, so a
	// small query cannot draw a large answer at a spoofed address.
	defaultEDNS = 1232
)

// DefaultMaxConcurrentForwards is Options.MaxConcurrentForwards's default.
const DefaultMaxConcurrentForwards = 1000

// DefaultAllowRecursion are the sources allowed recursion by default: the
// addresses pods and nodes have (loopback, RFC 1918, RFC 6598 shared space,
// link-local, IPv6 unique local).
var DefaultAllowRecursion = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("fc00::/7"),
}

// Forwarder resolves names outside the cluster zones.
type Forwarder interface {
	Resolve(ctx context.Context, req *dns.Msg) (*dns.Msg, error)
}

// Snapshots gives the current index snapshot; *index.Builder is one.
type Snapshots interface {
	Current() *index.Snapshot
}

// Options configure a Handler.
type Options struct {
	// Zones are the zones answered from the index, forward and reverse
	// ("cluster.local", "in-addr.arpa", "10.in-addr.arpa", "ip6.arpa").
	// In a reverse zone, a name that is no service or endpoint address
	// goes to the Forwarder, as CoreDNS's "fallthrough in-addr.arpa
	// ip6.arpa" does (once synced: before, it is SERVFAIL).
	Zones []string
	// TTL of every answer; the SOA's TTL is min(TTL, 300).
	TTL uint32
	// Pods is the pod-name mode.
	Pods PodMode
	// Isolation makes names of one regular tenant NXDOMAIN for pods of
	// another; system-tenant names stay visible to all.
	Isolation bool
	// AllowUnknownSources lets queriers that are not a known pod see every
	// tenant when Isolation is on.
	AllowUnknownSources bool
	// SystemPartition answers system-tenant names for queriers that are
	// not a known pod.
	SystemPartition int
	// NSAddrs are the server's own addresses (CoreDNS's local IPs).
	// ns.dns.<zone> answers the cluster IPs of the services whose ready
	// endpoints hold one of them (the kube-dns service in front of the
	// server), in the querier's partition first; these addresses
	// themselves when no such service is known.
	NSAddrs []netip.Addr
	// Forwarder resolves other names; nil answers them REFUSED.
	Forwarder Forwarder
	// ForwardTimeout bounds one forwarded query; default 5s.
	ForwardTimeout time.Duration
	// MaxConcurrentForwards bounds the queries waiting on an upstream at
	// once (DefaultMaxConcurrentForwards when zero, as CoreDNS's forward
	// plugin); a query over the bound gets SERVFAIL at once, and a flood of
	// names outside the zones cannot take the memory and goroutines the
	// cluster zones need.
	MaxConcurrentForwards int
	// AllowRecursion are the sources whose queries for names outside the
	// zones are forwarded (DefaultAllowRecursion when nil); others get
	// REFUSED. Names in the zones are answered to anyone.
	AllowRecursion []netip.Prefix
	// Metrics, when set, counts requests.
	Metrics *Metrics
}

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

// zoneOf returns the longest served zone that contains the lowercase wire
// name lw, or -1.
func (h *Handler) zoneOf(lw []byte, offs []uint8) int {
	best, bestLen := -1, -1
	for i := range h.zones {
		z := h.zones[i].wire
		if len(z) > len(lw) || len(z) <= bestLen {
			continue
		}
		at := len(lw) - len(z)
		if string(lw[at:]) != string(z) {
			continue
		}
		boundary := false
		for _, o := range offs {
			if int(o) == at {
				boundary = true
				break
			}
		}
		if boundary {
			best, bestLen = i, len(z)
		}
	}
	return best
}

// answer writes the answer for a name in zone zi and returns the rcode.
func (h *Handler) answer(st *state, zi int, qtype, qclass uint16, src netip.Addr) int {
	z := &h.zones[zi]
	e := &st.enc
	if qtype == dns.TypeAXFR || qtype == dns.TypeIXFR || qclass != dns.ClassINET {
		return dns.RcodeRefused
	}
	snap := h.snaps.Current()
	st.src = src
	nrel := st.nl - z.nlabels
	lw := st.lw[:]
	for i := 0; i < nrel; i++ {
		st.labels[i] = names.Label(lw, st.offs[:], i)
	}
	labels := st.labels[:nrel]
	if nrel == 0 {
		switch qtype {
		case dns.TypeSOA:
			h.soa(e, z, snap, answerSection, true)
			return dns.RcodeSuccess
		case dns.TypeNS:
			h.querier(st, snap)
			h.ns(st, z, snap)
			if e.counts[answerSection] > 0 {
				return dns.RcodeSuccess
			}
		}
		return h.nodata(e, z, snap)
	}
	if qtype == dns.TypeSOA {
		// CoreDNS answers SOA only at the apex and NODATA for any name below.
		return h.nodata(e, z, snap)
	}
	if z.reverse {
		h.querier(st, snap)
		return h.reverse(st, z, snap, qtype)
	}
	req := names.Parse(labels)
	switch req.Kind {
	case names.Invalid:
		return h.nxdomain(e, z, snap)
	case names.Apex:
		return h.nodata(e, z, snap)
	case names.DNSVersion, names.NameServer:
		h.querier(st, snap)
		if !h.special(st, snap, req.Kind, qtype) {
			return h.nxdomain(e, z, snap)
		}
		return h.finishAnswer(e, z, snap)
	}
	// The querier is looked up only now: doing it before Parse costs the
	// fast path about 10% (measured with BenchmarkLookupLegacyA).
	source, known := h.querier(st, snap)
	for i := 0; i < req.N; i++ {
		if f, ok := h.find(snap, &req.Readings[i], source, known); ok {
			h.records(st, z, snap, &f, qtype, 0)
			return h.finishAnswer(e, z, snap)
		}
	}
	return h.nxdomain(e, z, snap)
}

// querier reads what the index says of the querier at st.src into
// st.source and st.known, and returns them: an unknown source counts as
// one in the system partition.
func (h *Handler) querier(st *state, snap *index.Snapshot) (index.Source, bool) {
	source, known := snap.Source(st.src)
	if !known {
		source = index.Source{TP: h.opts.SystemPartition}
	}
	st.source, st.known = source, known
	return source, known
}

// lookup returns the first reading of req that names something that
// exists (see find).
func (h *Handler) lookup(snap *index.Snapshot, req *names.Request, src index.Source, known bool) (found, bool) {
	for i := 0; i < req.N; i++ {
		if f, ok := h.find(snap, &req.Readings[i], src, known); ok {
			return f, true
		}
	}
	return found{}, false
}

// special answers dns-version.<zone> and ns.dns.<zone>, which CoreDNS
// answers in every zone it serves, reverse ones too. It returns false when
// CoreDNS reads the query as one for a service name, which does not exist:
// dns-version for any type but TXT, ns.dns for TXT and PTR.
func (h *Handler) special(st *state, snap *index.Snapshot, k names.Kind, qtype uint16) bool {
	e := &st.enc
	if k == names.DNSVersion {
		if qtype != dns.TypeTXT {
			return false
		}
		r := e.begin(answerSection)
		e.owner()
		rd := e.typ(typeTXT, dnsVersionTTL)
		e.label(DNSSchemaVersion)
		e.end(r, rd)
		return true
	}
	switch qtype {
	case dns.TypeTXT, dns.TypePTR:
		return false
	case dns.TypeA, dns.TypeAAAA:
		st.addrs = h.nsAddrs(st.addrs[:0], snap, st.source, st.known)
		for _, a := range st.addrs {
			if a.Is6() == (qtype == dns.TypeAAAA) {
				r := e.begin(answerSection)
				e.owner()
				e.addr(r, a, h.opts.TTL)
			}
		}
	}
	return true
}

// nsAddrs appends the addresses of ns.dns.<zone> to dst. CoreDNS answers
// the cluster IPs of the services whose endpoints are its own addresses
// (the kube-dns service), the endpoint addresses for a headless one, and
// its own addresses when it finds no such endpoint. Here each partition
// may have its own kube-dns service in front of the server: the querier's
// partition is tried first, then the system partition, then the rest, and
// the first with such a service (visible to the querier) answers, so that
// a pod gets the address it reaches the server at.
func (h *Handler) nsAddrs(dst []netip.Addr, snap *index.Snapshot, src index.Source, known bool) []netip.Addr {
	ntp := len(snap.TPs)
	for k := 0; k < ntp; k++ {
		tp := partitionAt(k, ntp, src, h.opts.SystemPartition)
		if tp < 0 || tp >= ntp {
			continue
		}
		for _, own := range h.opts.NSAddrs {
			owners := snap.PTRs(own)
			for i := range owners {
				o := &owners[i]
				if o.TP != tp || !o.IsEndpoint() || !h.ptrVisible(snap, o, src, known) {
					continue
				}
				svc := o.Spec()
				if svc.Type != index.Headless {
					dst = appendNew(dst, svc.ClusterIPs...)
					continue
				}
				if v := snap.ServiceOf(o); v != nil {
					for j, n := 0, v.AddrCount(); j < n; j++ {
						dst = appendNew(dst, v.Addr(j))
					}
				}
			}
		}
		if len(dst) > 0 {
			return dst
		}
	}
	return appendNew(dst, h.opts.NSAddrs...)
}

// appendNew appends the addresses of as that dst does not hold yet.
func appendNew(dst []netip.Addr, as ...netip.Addr) []netip.Addr {
	for _, a := range as {
		if !slices.Contains(dst, a) {
			dst = append(dst, a)
		}
	}
	return dst
}

func (h *Handler) finishAnswer(e *encoder, z *zone, snap *index.Snapshot) int {
	if e.counts[answerSection] == 0 && !e.tc {
		return h.nodata(e, z, snap)
	}
	return dns.RcodeSuccess
}

func (h *Handler) nodata(e *encoder, z *zone, snap *index.Snapshot) int {
	h.soa(e, z, snap, authoritySection, false)
	return dns.RcodeSuccess
}

func (h *Handler) nxdomain(e *encoder, z *zone, snap *index.Snapshot) int {
	h.soa(e, z, snap, authoritySection, false)
	if !h.synced.Load() {
		return dns.RcodeServerFailure
	}
	return dns.RcodeNameError
}

func (h *Handler) soa(e *encoder, z *zone, snap *index.Snapshot, sec section, ownerQ bool) {
	ttl := min(h.opts.TTL, maxSOATTL)
	r := e.begin(sec)
	if ownerQ {
		e.owner()
	} else {
		e.buf = append(e.buf, z.wire...)
	}
	rd := e.typ(typeSOA, ttl)
	e.label("ns")
	e.label("dns")
	e.buf = append(e.buf, z.wire...)
	e.label("hostmaster")
	e.buf = append(e.buf, z.wire...)
	e.u32(snap.Serial)
	e.u32(7200)
	e.u32(1800)
	e.u32(86400)
	e.u32(h.opts.TTL)
	e.end(r, rd)
}

// ns answers the NS query at the apex: ns.dns.<zone>, with the addresses
// ns.dns.<zone> has for the querier as glue.
func (h *Handler) ns(st *state, z *zone, snap *index.Snapshot) {
	e := &st.enc
	if len(h.opts.NSAddrs) == 0 {
		return
	}
	r := e.begin(answerSection)
	e.owner()
	rd := e.typ(typeNS, h.opts.TTL)
	e.label("ns")
	e.label("dns")
	e.buf = append(e.buf, z.wire...)
	e.end(r, rd)
	st.addrs = h.nsAddrs(st.addrs[:0], snap, st.source, st.known)
	for _, a := range st.addrs {
		r := e.begin(extraSection)
		e.label("ns")
		e.label("dns")
		e.buf = append(e.buf, z.wire...)
		e.addr(r, a, h.opts.TTL)
	}
}

// found is a reading that names something that exists.
type found struct {
	rd  *names.Reading
	tp  int
	ns  *index.NamespaceView
	svc *index.ServiceView
	pod netip.Addr
}

var systemTenant = []byte(tenancy.SystemTenant)

// allowed applies tenant isolation to a regular tenant's name.
func (h *Handler) allowed(tenant []byte, src index.Source, known bool) bool {
	if !h.opts.Isolation {
		return true
	}
	if !known {
		return h.opts.AllowUnknownSources
	}
	return src.Tenant == tenancy.SystemTenant || src.Tenant == string(tenant)
}

// partitionAt returns the k-th partition to try for a system-tenant name:
// the querier's, then the system partition, then the rest in order.
func partitionAt(k, n int, src index.Source, sys int) int {
	first, second := src.TP, sys
	if k == 0 {
		return first
	}
	if second != first {
		if k == 1 {
			return second
		}
		k--
	}
	k--
	for tp := 0; tp < n; tp++ {
		if tp == first || tp == second {
			continue
		}
		if k == 0 {
			return tp
		}
		k--
	}
	return -1
}

// find decides whether a reading names something that exists, following
// CoreDNS's findServices and findPods.
func (h *Handler) find(snap *index.Snapshot, rd *names.Reading, src index.Source, known bool) (found, bool) {
	tenant := rd.Tenant
	system := rd.Legacy || string(tenant) == tenancy.SystemTenant
	if system {
		tenant = systemTenant
	}
	ntp := len(snap.TPs)
	tps := ntp
	home := -1
	if !system {
		if !h.allowed(tenant, src, known) {
			return found{}, false
		}
		tp, ok := snap.Home(tenant)
		if !ok {
			return found{}, false
		}
		home, tps = tp, 1
	}
	if rd.Form == names.TenantOnly {
		return found{rd: rd}, true
	}
	for k := 0; k < tps; k++ {
		tp := home
		if system {
			tp = partitionAt(k, ntp, src, h.opts.SystemPartition)
			if tp < 0 || tp >= ntp {
				continue
			}
		}
		ns := snap.Namespace(tp, tenant, rd.Namespace)
		if !ns.Exists() {
			continue
		}
		f := found{rd: rd, tp: tp, ns: ns}
		switch rd.Form {
		case names.NamespaceOnly:
			return f, true
		case names.PodName:
			if h.opts.Pods == PodsDisabled {
				return found{}, false
			}
			a, ok := names.ParseDashedIP(rd.Service)
			if !ok {
				return found{}, false
			}
			if h.opts.Pods == PodsVerified {
				if !snap.HasPod(a, tp, tenant, rd.Namespace) {
					continue
				}
			}
			f.pod = a
			return f, true
		}
		svc := ns.Services[string(rd.Service)]
		if svc == nil {
			continue
		}
		// The service exists here: this partition answers, records or not.
		f.svc = svc
		return f, hasRecords(svc, rd)
	}
	return found{}, false
}

func portMatch(rd *names.Reading, p *index.Port) bool {
	return (len(rd.Port) == 0 || strings.EqualFold(string(rd.Port), p.Name)) &&
		(len(rd.Protocol) == 0 || strings.EqualFold(string(rd.Protocol), p.Protocol))
}

func anyPort(rd *names.Reading, ports []index.Port) bool {
	for i := range ports {
		if portMatch(rd, &ports[i]) {
			return true
		}
	}
	return false
}

// hasRecords is CoreDNS's rule for whether a service name exists: an
// ExternalName by its bare name only (it has no endpoints, and CoreDNS
// 1.11 takes no port or protocol labels either) and only when its target
// is a name (CoreDNS makes no CNAME to an IP address), a headless service
// or an endpoint name when a ready endpoint matches, a ClusterIP service
// when a port matches.
func hasRecords(svc *index.ServiceView, rd *names.Reading) bool {
	if svc.Type == index.ExternalName {
		return rd.Form == names.ServiceName && len(rd.Port) == 0 && len(rd.Protocol) == 0 && !names.IsAddress(svc.ExternalName)
	}
	if svc.Type == index.Headless || rd.Form == names.EndpointName {
		for i := range svc.Endpoints {
			ep := &svc.Endpoints[i]
			if rd.Form == names.EndpointName && ep.Host != string(rd.Endpoint) {
				continue
			}
			if anyPort(rd, ep.Ports) {
				return true
			}
		}
		return false
	}
	return anyPort(rd, svc.Ports)
}

// records writes the answer records of a found name for qtype; depth is
// the number of CNAMEs followed to reach it.
func (h *Handler) records(st *state, z *zone, snap *index.Snapshot, f *found, qtype uint16, depth int) {
	e := &st.enc
	ttl := h.opts.TTL
	switch f.rd.Form {
	case names.TenantOnly, names.NamespaceOnly:
		return
	case names.PodName:
		if (qtype == dns.TypeA && f.pod.Is4()) || (qtype == dns.TypeAAAA && f.pod.Is6()) {
			r := e.begin(answerSection)
			e.owner()
			e.addr(r, f.pod, ttl)
		}
		return
	}
	svc := f.svc
	switch qtype {
	case dns.TypeA, dns.TypeAAAA:
		want6 := qtype == dns.TypeAAAA
		switch {
		case svc.Type == index.ExternalName:
			h.cname(st, snap, svc.ExternalName, qtype, depth)
		case svc.Type == index.Headless || f.rd.Form == names.EndpointName:
			if f.rd.Form != names.EndpointName && len(f.rd.Port) == 0 && len(f.rd.Protocol) == 0 {
				for i, n := 0, svc.AddrCount(); i < n; i++ {
					if a := svc.Addr(i); a.Is6() == want6 {
						r := e.begin(answerSection)
						e.owner()
						e.addr(r, a, ttl)
					}
				}
				return
			}
			for i := range svc.Endpoints {
				ep := &svc.Endpoints[i]
				if ep.Addr.Is6() != want6 || !endpointMatch(f.rd, ep) || seenAddr(svc, i, f.rd) {
					continue
				}
				r := e.begin(answerSection)
				e.owner()
				e.addr(r, ep.Addr, ttl)
			}
		default:
			for _, a := range svc.ClusterIPs {
				if a.Is6() == want6 {
					r := e.begin(answerSection)
					e.owner()
					e.addr(r, a, ttl)
				}
			}
		}
	case dns.TypeCNAME:
		if svc.Type == index.ExternalName {
			r := e.begin(answerSection)
			e.owner()
			rd := e.typ(typeCNAME, ttl)
			e.fqdn(svc.ExternalName)
			e.end(r, rd)
		}
	case dns.TypeSRV:
		h.srv(e, z, f)
	}
}

func endpointMatch(rd *names.Reading, ep *index.EndpointView) bool {
	if rd.Form == names.EndpointName && ep.Host != string(rd.Endpoint) {
		return false
	}
	return anyPort(rd, ep.Ports)
}

// seenAddr reports whether an earlier matching endpoint has the address of
// endpoint i (the same address can be in two slices).
func seenAddr(svc *index.ServiceView, i int, rd *names.Reading) bool {
	for j := 0; j < i; j++ {
		if svc.Endpoints[j].Addr == svc.Endpoints[i].Addr && endpointMatch(rd, &svc.Endpoints[j]) {
			return true
		}
	}
	return false
}

// target writes "[host.]svc.ns[.tenant].svc.<zone>", in the form of the
// query: legacy names get legacy targets.
func (e *encoder) target(z *zone, f *found, host string) {
	if host != "" {
		e.label(host)
	}
	e.label(f.svc.Name)
	e.labelBytes(f.rd.Namespace)
	if !f.rd.Legacy {
		e.labelBytes(f.rd.Tenant)
	}
	e.label("svc")
	e.buf = append(e.buf, z.wire...)
}

// srv writes one answer-section SRV record for the queried name: priority
// 0, weight w, port and the target host (see target).
func (e *encoder) srv(z *zone, f *found, ttl uint32, w uint16, port int32, host string) {
	r := e.begin(answerSection)
	e.owner()
	d := e.typ(typeSRV, ttl)
	e.u16(0)
	e.u16(w)
	e.u16(uint16(port))
	e.target(z, f, host)
	e.end(r, d)
}

// srvWeight is CoreDNS's weight for n records of equal priority.
func srvWeight(n int) uint16 {
	if n <= 0 {
		return 100
	}
	w := 100 / n
	if w == 0 {
		w = 1
	}
	return uint16(w)
}

func (h *Handler) srv(e *encoder, z *zone, f *found) {
	svc, rd, ttl := f.svc, f.rd, h.opts.TTL
	if svc.Type == index.ExternalName {
		return
	}
	if svc.Type == index.ClusterIP && rd.Form != names.EndpointName {
		n := 0
		for i := range svc.Ports {
			if portMatch(rd, &svc.Ports[i]) {
				n += len(svc.ClusterIPs)
			}
		}
		w := srvWeight(n)
		wrote := false
		for i := range svc.Ports {
			p := &svc.Ports[i]
			if p.Port == index.NoPort || !portMatch(rd, p) || len(svc.ClusterIPs) == 0 || dupPort(svc.Ports[:i], rd, p.Port) {
				continue
			}
			e.srv(z, f, ttl, w, p.Port, "")
			wrote = true
		}
		if wrote {
			for _, a := range svc.ClusterIPs {
				r := e.begin(extraSection)
				e.target(z, f, "")
				e.addr(r, a, ttl)
			}
		}
		return
	}
	n := 0
	for i := range svc.Endpoints {
		ep := &svc.Endpoints[i]
		if rd.Form == names.EndpointName && ep.Host != string(rd.Endpoint) {
			continue
		}
		for j := range ep.Ports {
			if portMatch(rd, &ep.Ports[j]) {
				n++
			}
		}
	}
	w := srvWeight(n)
	for i := range svc.Endpoints {
		ep := &svc.Endpoints[i]
		if rd.Form == names.EndpointName && ep.Host != string(rd.Endpoint) {
			continue
		}
		for j := range ep.Ports {
			p := &ep.Ports[j]
			if p.Port == index.NoPort || !portMatch(rd, p) || dupEndpointPort(svc, i, j, rd) {
				continue
			}
			e.srv(z, f, ttl, w, p.Port, ep.Host)
		}
	}
	for i := range svc.Endpoints {
		ep := &svc.Endpoints[i]
		if rd.Form == names.EndpointName && ep.Host != string(rd.Endpoint) {
			continue
		}
		if !hasSRVPort(rd, ep.Ports) || dupEndpointAddr(svc, i, rd) {
			continue
		}
		r := e.begin(extraSection)
		e.target(z, f, ep.Host)
		e.addr(r, ep.Addr, ttl)
	}
}

func hasSRVPort(rd *names.Reading, ports []index.Port) bool {
	for i := range ports {
		if ports[i].Port != index.NoPort && portMatch(rd, &ports[i]) {
			return true
		}
	}
	return false
}

func dupPort(prev []index.Port, rd *names.Reading, port int32) bool {
	for i := range prev {
		if prev[i].Port == port && portMatch(rd, &prev[i]) {
			return true
		}
	}
	return false
}

// dupEndpointPort reports whether an earlier endpoint with the same host
// already produced an SRV record for the same port (same target and port).
func dupEndpointPort(svc *index.ServiceView, i, j int, rd *names.Reading) bool {
	ep := &svc.Endpoints[i]
	port := ep.Ports[j].Port
	if dupPort(ep.Ports[:j], rd, port) {
		return true
	}
	for k := 0; k < i; k++ {
		o := &svc.Endpoints[k]
		if o.Host != ep.Host || (rd.Form == names.EndpointName && o.Host != string(rd.Endpoint)) {
			continue
		}
		if dupPort(o.Ports, rd, port) && hasSRVPort(rd, o.Ports) {
			return true
		}
	}
	return false
}

func dupEndpointAddr(svc *index.ServiceView, i int, rd *names.Reading) bool {
	ep := &svc.Endpoints[i]
	for k := 0; k < i; k++ {
		o := &svc.Endpoints[k]
		if o.Host == ep.Host && o.Addr == ep.Addr && hasSRVPort(rd, o.Ports) {
			return true
		}
	}
	return false
}

// maxCNAMEs bounds a chain of ExternalName services answered from the
// index, as CoreDNS's does (it follows at most 8 CNAMEs).
const maxCNAMEs = 8

// cname writes the CNAME of an ExternalName service to target and then the
// target's records of type qtype, as CoreDNS's kubernetes plugin does. A
// target in a served forward zone is answered from the index, and when it
// has no such records the CNAME is taken back too (NODATA, as CoreDNS). Any
// other target is asked of the forwarder (see resolveTarget). depth is the
// number of CNAMEs already written; past maxCNAMEs nothing is written and
// the chain above is taken back.
func (h *Handler) cname(st *state, snap *index.Snapshot, target string, qtype uint16, depth int) {
	e := &st.enc
	if depth >= maxCNAMEs {
		return
	}
	before := e.mark()
	r := e.begin(answerSection)
	e.owner()
	rd := e.typ(typeCNAME, h.opts.TTL)
	e.fqdn(target)
	// A CNAME that does not fit is dropped (and TC set), but the chain is
	// still followed: if it leads nowhere, the answer is NODATA, not TC.
	e.end(r, rd)
	zi := h.targetZone(st, target)
	if zi < 0 {
		h.resolveTarget(st, target, qtype)
		return
	}
	if !h.chase(st, snap, zi, rd, qtype, depth+1) {
		e.rollback(before)
	}
}

// targetZone reads target into st.lw and st.offs and returns the served
// forward zone that holds it, or -1. A reverse zone holds no address
// records, so a target there goes upstream, as CoreDNS's would.
func (h *Handler) targetZone(st *state, target string) int {
	n := names.FromDotted(st.lw[:], target)
	if n < 0 {
		return -1
	}
	if st.nl = names.Split(st.lw[:n], st.offs[:]); st.nl < 0 {
		return -1
	}
	zi := h.zoneOf(st.lw[:n], st.offs[:st.nl])
	if zi < 0 || h.zones[zi].reverse {
		return -1
	}
	return zi
}

// chase writes the qtype records of the name in st.lw, in zone zi, owned by
// the CNAME target written at offset at; depth CNAMEs lead to it. It
// reports whether the name has such records, written or dropped for want
// of room.
func (h *Handler) chase(st *state, snap *index.Snapshot, zi, at int, qtype uint16, depth int) bool {
	e := &st.enc
	owner, ok := pointerTo(at)
	if !ok {
		return false
	}
	z := &h.zones[zi]
	nrel := st.nl - z.nlabels
	for i := 0; i < nrel; i++ {
		st.labels[i] = names.Label(st.lw[:], st.offs[:], i)
	}
	req := names.Parse(st.labels[:nrel])
	saved, n := e.ownerPtr, e.tried(answerSection)
	e.ownerPtr = owner
	switch req.Kind {
	case names.NameServer:
		h.special(st, snap, req.Kind, qtype)
	case names.Service, names.Pod:
		if f, ok := h.lookup(snap, &req, st.source, st.known); ok {
			h.records(st, z, snap, &f, qtype, depth)
		}
	}
	e.ownerPtr = saved
	return e.tried(answerSection) > n
}

// resolveTarget asks the forwarder for an ExternalName's target outside the
// zones and appends the answer's records. Without a forwarder, for a
// source not allowed recursion, over MaxConcurrentForwards or when the
// upstream fails, the CNAME stands alone and the client resolves the target
// itself.
func (h *Handler) resolveTarget(st *state, target string, qtype uint16) {
	e := &st.enc
	if h.opts.Forwarder == nil || !h.recursionAllowed(st.src) || e.full[answerSection] {
		return
	}
	if !st.mayBlock {
		st.needSlow = true
		return
	}
	if !h.acquireForward() {
		return
	}
	defer h.releaseForward()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(target), qtype)
	m.RecursionDesired = true
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.ForwardTimeout)
	defer cancel()
	resp, err := h.opts.Forwarder.Resolve(ctx, m)
	if err != nil || resp == nil {
		return
	}
	if resp.Truncated {
		e.tc = true // as CoreDNS: the client retries over TCP
	}
	for _, rr := range resp.Answer {
		start := len(e.buf)
		off, err := dns.PackRR(rr, e.buf[:cap(e.buf)], start, nil, false)
		if err != nil || off > e.limit {
			e.buf = e.buf[:start]
			e.full[answerSection], e.tc = true, true
			return
		}
		e.buf = e.buf[:off]
		e.counts[answerSection]++
	}
}

// reverse answers names in a reverse zone: PTR for service and endpoint
// addresses, dns-version and ns.dns as in any zone. Any other name goes to
// the forwarder, as CoreDNS's usual "fallthrough in-addr.arpa ip6.arpa"
// does, or is NXDOMAIN without one.
func (h *Handler) reverse(st *state, z *zone, snap *index.Snapshot, qtype uint16) int {
	e := &st.enc
	if nrel := st.nl - z.nlabels; nrel <= 2 {
		if k := names.Parse(st.labels[:nrel]).Kind; k == names.DNSVersion || k == names.NameServer {
			if h.special(st, snap, k, qtype) {
				return h.finishAnswer(e, z, snap)
			}
		}
	}
	if qtype == dns.TypePTR && h.primary >= 0 {
		for i := st.nl - z.nlabels; i < st.nl; i++ {
			st.labels[i] = names.Label(st.lw[:], st.offs[:], i)
		}
		if a, ok := names.ParseReverse(st.labels[:st.nl]); ok && h.ptr(e, snap, a, st.source, st.known) {
			return dns.RcodeSuccess
		}
	}
	// Before the first sync the miss may be a cluster address not indexed
	// yet: SERVFAIL (see nxdomain), not an upstream NXDOMAIN that clients
	// would cache.
	if h.opts.Forwarder != nil && h.synced.Load() {
		return rcodeForward
	}
	return h.nxdomain(e, z, snap)
}

// rcodeForward asks ServeDNS to forward a reverse-zone miss.
const rcodeForward = -1

func (h *Handler) ptr(e *encoder, snap *index.Snapshot, a netip.Addr, src index.Source, known bool) bool {
	owners := snap.PTRs(a)
	if len(owners) == 0 {
		return false
	}
	pz := &h.zones[h.primary]
	ntp := len(snap.TPs)
	for k := 0; k < ntp; k++ {
		tp := partitionAt(k, ntp, src, h.opts.SystemPartition)
		if tp < 0 || tp >= ntp {
			continue
		}
		// A cluster IP wins over endpoints, and yields one record.
		best := -1
		for i := range owners {
			o := &owners[i]
			if o.TP != tp || !h.ptrVisible(snap, o, src, known) {
				continue
			}
			if o.Host() == "" {
				best = i
				break
			}
		}
		wrote := false
		for i := range owners {
			o := &owners[i]
			if o.TP != tp || !h.ptrVisible(snap, o, src, known) {
				continue
			}
			if best >= 0 && i != best {
				continue
			}
			r := e.begin(answerSection)
			e.owner()
			d := e.typ(typePTR, h.opts.TTL)
			if host := o.Host(); host != "" {
				e.label(host)
			}
			e.label(o.Service())
			e.label(o.Namespace)
			if o.Tenant != tenancy.SystemTenant {
				e.label(o.Tenant)
			}
			e.label("svc")
			e.buf = append(e.buf, pz.wire...)
			e.end(r, d)
			wrote = true
		}
		if wrote {
			return true
		}
	}
	return false
}

func (h *Handler) ptrVisible(snap *index.Snapshot, o *index.PTR, src index.Source, known bool) bool {
	if o.Tenant == tenancy.SystemTenant {
		return true
	}
	if home, ok := snap.Home([]byte(o.Tenant)); !ok || home != o.TP {
		return false
	}
	return h.allowed([]byte(o.Tenant), src, known)
}

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
	if !h.acquireForward() {
		m.SetRcode(r, dns.RcodeServerFailure)
		_ = w.WriteMsg(m)
		return dns.RcodeServerFailure
	}
	defer h.releaseForward()
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.ForwardTimeout)
	defer cancel()
	resp, err := h.opts.Forwarder.Resolve(ctx, r)
	if err != nil || resp == nil {
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

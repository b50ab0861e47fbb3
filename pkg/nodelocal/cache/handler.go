package cache

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
	"k8s.io/klog/v2"
)

// Route sends the names under Zone to Upstream.
type Route struct {
	// Zone is a domain name; "." matches every name.
	Zone string
	// Upstream answers the zone's misses.
	Upstream Upstream
	// Label names the route in metrics ("cluster", "host").
	Label string
	// ClientSubnet sends the asking pod's address to Upstream as an EDNS
	// Client Subnet option (RFC 7871, /32 or /128), replacing any the pod
	// sent, so that partition-dns answers as it would the pod itself. An
	// answer the upstream scopes to that address (scope prefix > 0) is
	// cached for that pod alone; one scoped /0 is shared by every pod.
	ClientSubnet bool
}

// HandlerConfig configures a Handler.
type HandlerConfig struct {
	Cache Config
	// Routes map zones to upstreams; the longest matching zone wins.
	Routes []Route
	// Identity answers CHAOS TXT id.server. and hostname.bind.
	Identity string
	// UpstreamTimeout bounds one upstream exchange (default 2 s).
	UpstreamTimeout time.Duration
	// MaxPrefetches bounds concurrent background refreshes (default 16).
	MaxPrefetches int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Handler is the cache's dns.Handler.
type Handler struct {
	cfg    HandlerConfig
	store  *Store
	routes []Route
	now    func() time.Time
	m      *metrics

	prefetchSem chan struct{}
	flight      singleflight.Group // one upstream exchange per question in flight
	draining    atomic.Bool
	bufs        sync.Pool // *[]byte answer buffers for the hit path
	prefetches  inflight
}

// inflight counts background prefetches. Unlike a sync.WaitGroup, a prefetch
// may start from zero while Wait runs: Wait is called at shutdown (and by
// tests) while queries still arrive, and the only order between a query's
// prefetch and that Wait is the network's, which a WaitGroup does not allow.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle *sync.Cond // signalled when n drops to 0
}

func (f *inflight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	if f.n--; f.n == 0 && f.idle != nil {
		f.idle.Broadcast()
	}
	f.mu.Unlock()
}

func (f *inflight) wait() {
	f.mu.Lock()
	for f.n > 0 {
		if f.idle == nil {
			f.idle = sync.NewCond(&f.mu)
		}
		f.idle.Wait()
	}
	f.mu.Unlock()
}

// NewHandler returns a handler and registers its metrics on reg (when not
// nil).
func NewHandler(cfg HandlerConfig, reg prometheus.Registerer) (*Handler, error) {
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = 2 * time.Second
	}
	if cfg.MaxPrefetches <= 0 {
		cfg.MaxPrefetches = 16
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Handler{
		cfg:         cfg,
		store:       NewStore(cfg.Cache, cfg.Now),
		now:         cfg.Now,
		prefetchSem: make(chan struct{}, cfg.MaxPrefetches),
	}
	h.bufs.New = func() any { b := make([]byte, 0, 512); return &b }
	for _, r := range cfg.Routes {
		r.Zone = dns.CanonicalName(r.Zone)
		h.routes = append(h.routes, r)
	}
	// Longest zone first, so the first match is the most specific.
	sort.SliceStable(h.routes, func(i, j int) bool {
		return dns.CountLabel(h.routes[i].Zone) > dns.CountLabel(h.routes[j].Zone)
	})
	m, err := newMetrics(reg, h.store)
	if err != nil {
		return nil, err
	}
	h.m = m
	return h, nil
}

// Store returns the handler's cache, for inspection.
func (h *Handler) Store() *Store { return h.store }

// SetDraining makes the identity probe fail (REFUSED) while every other
// query is still answered: a stopping cache tells the watcher to move the
// traffic away before its sockets close.
func (h *Handler) SetDraining(d bool) { h.draining.Store(d) }

// Wait waits for background prefetches to finish.
func (h *Handler) Wait() { h.prefetches.wait() }

func (h *Handler) route(name string) *Route {
	for i := range h.routes {
		if dns.IsSubDomain(h.routes[i].Zone, name) {
			return &h.routes[i]
		}
	}
	return nil
}

// ServeDNS implements dns.Handler.
func (h *Handler) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	if req == nil || req.Response || req.Opcode != dns.OpcodeQuery || len(req.Question) != 1 {
		h.fail(w, req, dns.RcodeFormatError)
		return
	}
	q := req.Question[0]
	if q.Qclass == dns.ClassCHAOS {
		h.chaos(w, req)
		return
	}
	do := false
	if opt := req.IsEdns0(); opt != nil {
		do = opt.Do()
	}
	var client netip.Addr
	if rt := h.route(q.Name); rt != nil && rt.ClientSubnet {
		client = addrOf(w.RemoteAddr())
	}
	e, st := h.lookup(q, do, client)
	if st == Fresh {
		h.m.hits[e.Kind].Inc()
		h.maybePrefetch(e, q, do)
		ttl := ttlSeconds(e.Remaining(h.now()))
		_, udp := w.RemoteAddr().(*net.UDPAddr)
		if !h.writeFast(w, req, e, ttl, udp) {
			h.write(w, req, e, ttl)
		}
		return
	}
	h.m.misses.Inc()
	r, err := h.resolve(q, do, client)
	if err == nil && r.Rcode != dns.RcodeServerFailure && r.Rcode != dns.RcodeRefused {
		if ne, kind := h.store.SetFor(q, do, scopedTo(r, client), r); kind != Uncacheable {
			h.write(w, req, ne, ttlSeconds(ne.TTL()))
			return
		}
		h.writeUpstream(w, req, r)
		return
	}
	if st == Stale {
		h.m.stale.Inc()
		ttl := h.cfg.Cache.StaleTTL
		if ttl <= 0 || ttl > e.TTL() {
			ttl = e.TTL()
		}
		h.write(w, req, e, ttlSeconds(ttl))
		return
	}
	if err == nil {
		h.writeUpstream(w, req, r)
		return
	}
	h.fail(w, req, dns.RcodeServerFailure)
}

func ttlSeconds(d time.Duration) uint32 {
	if d <= 0 {
		return 0
	}
	return uint32((d + time.Second - 1) / time.Second)
}

// lookup finds the cached answer to q for client: one every client shares,
// else one that belongs to client (a valid client only). A fresh entry
// wins over a stale one.
func (h *Handler) lookup(q dns.Question, do bool, client netip.Addr) (*Entry, State) {
	e, st := h.store.Get(q, do)
	if st == Fresh || !client.IsValid() {
		return e, st
	}
	if ce, cst := h.store.GetFor(q, do, client); cst == Fresh || (cst == Stale && st == Miss) {
		return ce, cst
	}
	return e, st
}

// addrOf is the IP address of a client's socket address.
func addrOf(a net.Addr) netip.Addr {
	var ip net.IP
	switch a := a.(type) {
	case *net.UDPAddr:
		ip = a.IP
	case *net.TCPAddr:
		ip = a.IP
	}
	addr, _ := netip.AddrFromSlice(ip)
	return addr.Unmap()
}

// scopedTo returns the client an upstream answer belongs to: client when
// the answer's ECS option has a scope prefix longer than /0, else the zero
// Addr (every client shares it).
func scopedTo(r *dns.Msg, client netip.Addr) netip.Addr {
	if !client.IsValid() {
		return netip.Addr{}
	}
	if opt := r.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if s, ok := o.(*dns.EDNS0_SUBNET); ok && s.SourceScope > 0 {
				return client
			}
		}
	}
	return netip.Addr{}
}

// clientSubnet is the ECS option that names one client: /32 or /128.
func clientSubnet(client netip.Addr) *dns.EDNS0_SUBNET {
	s := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 32, Address: net.IP(client.AsSlice())}
	if client.Is6() {
		s.Family, s.SourceNetmask = 2, 128
	}
	return s
}

// resolve asks the zone's upstream, sharing one exchange among concurrent
// askers of the same question (and, with a client, of the same client).
func (h *Handler) resolve(q dns.Question, do bool, client netip.Addr) (*dns.Msg, error) {
	v, err, _ := h.flight.Do(flightKey(q, do, client), func() (interface{}, error) {
		rt := h.route(q.Name)
		if rt == nil {
			return nil, errNoRoute
		}
		m := new(dns.Msg)
		m.Id = dns.Id()
		m.RecursionDesired = true
		m.Question = []dns.Question{q}
		m.SetEdns0(1232, do)
		if client.IsValid() {
			opt := m.IsEdns0()
			opt.Option = append(opt.Option, clientSubnet(client))
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.cfg.UpstreamTimeout)
		defer cancel()
		r, err := rt.Upstream.Exchange(ctx, m)
		if err != nil {
			h.m.upstreamErrors.WithLabelValues(rt.Label).Inc()
			klog.V(2).InfoS("Upstream failed", "upstream", rt.Upstream.String(), "name", q.Name, "err", err)
			return nil, err
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	// Every waiter gets the same message: it is read, never changed.
	return v.(*dns.Msg), nil
}

type noRouteError struct{}

func (noRouteError) Error() string { return "no upstream for this zone" }

var errNoRoute error = noRouteError{}

// maybePrefetch refreshes a popular entry near its expiry in the background.
func (h *Handler) maybePrefetch(e *Entry, q dns.Question, do bool) {
	amount := h.cfg.Cache.PrefetchAmount
	if amount <= 0 {
		return
	}
	hits := e.hits.Add(1)
	if hits < int64(amount) {
		return
	}
	left := e.Remaining(h.now())
	if int64(left)*100 > e.ttl*int64(h.cfg.Cache.PrefetchPercentage) {
		return
	}
	if !e.prefetching.CompareAndSwap(false, true) {
		return
	}
	select {
	case h.prefetchSem <- struct{}{}:
	default:
		e.prefetching.Store(false)
		return
	}
	q.Name = lowerASCII(q.Name)
	h.prefetches.add()
	go func() {
		defer h.prefetches.done()
		defer func() { <-h.prefetchSem }()
		r, err := h.resolve(q, do, e.client)
		if err != nil || r.Rcode == dns.RcodeServerFailure || r.Rcode == dns.RcodeRefused {
			// Keep the entry; it may be served stale later.
			e.prefetching.Store(false)
			return
		}
		h.m.prefetches.Inc()
		h.store.SetFor(q, do, scopedTo(r, e.client), r)
	}()
}

// write answers req from a cache entry, every record with TTL ttl.
func (h *Handler) write(w dns.ResponseWriter, req *dns.Msg, e *Entry, ttl uint32) {
	m := new(dns.Msg)
	m.SetRcode(req, e.Rcode)
	m.RecursionAvailable = true
	m.Answer = copyRRs(e.Answer, ttl)
	m.Ns = copyRRs(e.Ns, ttl)
	m.Extra = copyRRs(e.Extra, ttl)
	h.send(w, req, m)
}

// writeUpstream relays an answer that was not cached.
func (h *Handler) writeUpstream(w dns.ResponseWriter, req *dns.Msg, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetRcode(req, r.Rcode)
	m.RecursionAvailable = true
	m.AuthenticatedData = r.AuthenticatedData
	m.Answer, m.Ns = r.Answer, r.Ns
	for _, rr := range r.Extra {
		if rr.Header().Rrtype != dns.TypeOPT {
			m.Extra = append(m.Extra, rr)
		}
	}
	h.send(w, req, m)
}

func copyRRs(rrs []dns.RR, ttl uint32) []dns.RR {
	if len(rrs) == 0 {
		return nil
	}
	out := make([]dns.RR, len(rrs))
	for i, rr := range rrs {
		c := dns.Copy(rr)
		c.Header().Ttl = ttl
		out[i] = c
	}
	return out
}

// send adds EDNS when the client used it, truncates to what a UDP client
// can take, and writes.
func (h *Handler) send(w dns.ResponseWriter, req, m *dns.Msg) {
	size := dns.MinMsgSize
	if opt := req.IsEdns0(); opt != nil {
		if s := int(opt.UDPSize()); s > size {
			size = s
		}
		m.SetEdns0(1232, opt.Do())
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		if size > 1232 {
			size = 1232
		}
		m.Truncate(size)
	} else {
		m.Truncate(dns.MaxMsgSize)
	}
	if err := w.WriteMsg(m); err != nil {
		klog.V(3).InfoS("Writing answer failed", "client", w.RemoteAddr().String(), "err", err)
	}
}

func (h *Handler) fail(w dns.ResponseWriter, req *dns.Msg, rcode int) {
	m := new(dns.Msg)
	if req == nil {
		return
	}
	m.SetRcode(req, rcode)
	if len(req.Question) > 1 {
		m.Question = nil
	}
	m.RecursionAvailable = true
	h.send(w, req, m)
}

// chaos answers the identity queries; other CHAOS queries are refused.
func (h *Handler) chaos(w dns.ResponseWriter, req *dns.Msg) {
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	if q.Qtype != dns.TypeTXT || (name != "id.server." && name != "hostname.bind.") || h.draining.Load() {
		h.fail(w, req, dns.RcodeRefused)
		return
	}
	h.m.chaos.Inc()
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	m.Answer = []dns.RR{&dns.TXT{
		Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassCHAOS, Ttl: 0},
		Txt: []string{h.cfg.Identity},
	}}
	h.send(w, req, m)
}

// flightKey is the question an upstream exchange answers, as the key of
// the single-flight group: name (lowercased), type, class, DO and the
// client whose address the exchange carries.
func flightKey(q dns.Question, do bool, client netip.Addr) string {
	return fmt.Sprintf("%s/%d/%d/%t/%s", lowerASCII(q.Name), q.Qtype, q.Qclass, do, client)
}

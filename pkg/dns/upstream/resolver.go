package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"sync"
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
	// ClientSubnet sends the asking client's address to Upstream as an
	// EDNS Client Subnet option (RFC 7871, /32 or /128), so that
	// partition-dns answers as it would the client itself. An answer the
	// upstream scopes to that address (scope prefix > 0) is cached for that
	// client alone; one scoped /0 is shared by every client.
	ClientSubnet bool
}

// ResolverConfig configures a Resolver.
type ResolverConfig struct {
	Cache Config
	// Routes map zones to upstreams; the longest matching zone wins.
	Routes []Route
	// UpstreamTimeout bounds one upstream exchange (default 2 s).
	UpstreamTimeout time.Duration
	// MaxPrefetches bounds concurrent background refreshes (default 16).
	MaxPrefetches int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// MetricsPrefix starts the metrics' names ("tpkit_nodelocal",
	// "tpkit_dns_forward"); default "tpkit_dns_upstream".
	MetricsPrefix string
}

// Resolver answers questions from a bounded cache (Store) or the upstream
// of the question's zone: concurrent misses of one question share one
// exchange, popular entries are refreshed before they expire, and an
// expired entry is served when the upstream fails. partition-dns's forward
// path and node-cache both use it.
type Resolver struct {
	cfg    ResolverConfig
	store  *Store
	routes []Route
	m      *metrics

	prefetchSem chan struct{}
	flight      singleflight.Group // one upstream exchange per question (and client) in flight
	prefetches  inflight
}

// NewResolver returns a resolver and registers its metrics on reg (when
// not nil).
func NewResolver(cfg ResolverConfig, reg prometheus.Registerer) (*Resolver, error) {
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = 2 * time.Second
	}
	if cfg.MaxPrefetches <= 0 {
		cfg.MaxPrefetches = 16
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MetricsPrefix == "" {
		cfg.MetricsPrefix = "tpkit_dns_upstream"
	}
	r := &Resolver{cfg: cfg, store: NewStore(cfg.Cache, cfg.Now), prefetchSem: make(chan struct{}, cfg.MaxPrefetches)}
	for _, rt := range cfg.Routes {
		rt.Zone = dns.CanonicalName(rt.Zone)
		r.routes = append(r.routes, rt)
	}
	// Longest zone first, so the first match is the most specific.
	sort.SliceStable(r.routes, func(i, j int) bool {
		return dns.CountLabel(r.routes[i].Zone) > dns.CountLabel(r.routes[j].Zone)
	})
	m, err := newMetrics(reg, cfg.MetricsPrefix, r.store)
	if err != nil {
		return nil, err
	}
	r.m = m
	return r, nil
}

// Store returns the resolver's cache, for inspection.
func (r *Resolver) Store() *Store { return r.store }

// Wait waits for background prefetches to finish.
func (r *Resolver) Wait() { r.prefetches.wait() }

func (r *Resolver) route(name string) *Route {
	for i := range r.routes {
		if dns.IsSubDomain(r.routes[i].Zone, name) {
			return &r.routes[i]
		}
	}
	return nil
}

// Answer is what Lookup found for a question: a cached entry to serve with
// TTL, or an upstream answer that was not cached.
type Answer struct {
	// Entry is the cached answer (fresh, or stale after an upstream
	// failure); nil when Msg is set. Its sections are shared: read only.
	Entry *Entry
	// TTL is what Entry's records are served with, in seconds.
	TTL uint32
	// Msg is an upstream answer that could not be cached (SERVFAIL,
	// REFUSED, truncated, TTL 0); shared with other askers: read only.
	Msg *dns.Msg
}

// Lookup answers q for a client at client (the zero Addr when unknown):
// from the cache when fresh, else from the zone's upstream, else, when
// that fails, from a stale entry. The client's address goes upstream only
// on routes with ClientSubnet.
func (r *Resolver) Lookup(ctx context.Context, q dns.Question, do bool, client netip.Addr) (Answer, error) {
	e, st := r.lookup(q, do, &client)
	if st == Fresh {
		r.m.hits[e.Kind].Inc()
		r.maybePrefetch(e, q, do)
		return Answer{Entry: e, TTL: ttlSeconds(e.Remaining(r.cfg.Now()))}, nil
	}
	r.m.misses.Inc()
	m, err := r.fetch(ctx, q, do, client)
	if err == nil && m.Rcode != dns.RcodeServerFailure && m.Rcode != dns.RcodeRefused {
		if ne, kind := r.store.SetFor(q, do, scopedTo(m, client), m); kind != Uncacheable {
			return Answer{Entry: ne, TTL: ttlSeconds(ne.TTL())}, nil
		}
		return Answer{Msg: m}, nil
	}
	if st == Stale {
		r.m.stale.Inc()
		ttl := r.cfg.Cache.StaleTTL
		if ttl <= 0 || ttl > e.TTL() {
			ttl = e.TTL()
		}
		return Answer{Entry: e, TTL: ttlSeconds(ttl)}, nil
	}
	if err == nil {
		return Answer{Msg: m}, nil
	}
	return Answer{}, err
}

// Resolve answers req, a query with one question, as a reply message the
// caller owns (ID and question are the caller's to set): partition-dns's
// Forwarder. Other EDNS options of req are not sent upstream.
func (r *Resolver) Resolve(ctx context.Context, req *dns.Msg) (*dns.Msg, error) {
	if len(req.Question) != 1 {
		return nil, errors.New("upstream: a query has exactly one question")
	}
	if req.Opcode != dns.OpcodeQuery {
		return nil, fmt.Errorf("upstream: opcode %s is not forwarded", dns.OpcodeToString[req.Opcode])
	}
	do := false
	if opt := req.IsEdns0(); opt != nil {
		do = opt.Do()
	}
	a, err := r.Lookup(ctx, req.Question[0], do, netip.Addr{})
	if err != nil {
		return nil, err
	}
	m := new(dns.Msg)
	if a.Msg != nil {
		m.SetRcode(req, a.Msg.Rcode)
		m.Truncated, m.AuthenticatedData = a.Msg.Truncated, a.Msg.AuthenticatedData
		m.Answer, m.Ns = copyRRs(a.Msg.Answer), copyRRs(a.Msg.Ns)
		for _, rr := range a.Msg.Extra {
			if rr.Header().Rrtype != dns.TypeOPT {
				m.Extra = append(m.Extra, dns.Copy(rr))
			}
		}
	} else {
		m.SetRcode(req, a.Entry.Rcode)
		m.Answer, m.Ns, m.Extra = CopyRecords(a.Entry.Answer, a.TTL), CopyRecords(a.Entry.Ns, a.TTL), CopyRecords(a.Entry.Extra, a.TTL)
	}
	m.RecursionAvailable = true
	// EDNS as the client asked: the upstream was always asked with it.
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(1232, do)
	}
	return m, nil
}

func copyRRs(rrs []dns.RR) []dns.RR {
	if len(rrs) == 0 {
		return nil
	}
	out := make([]dns.RR, len(rrs))
	for i, rr := range rrs {
		out[i] = dns.Copy(rr)
	}
	return out
}

// CopyRecords copies rrs with every TTL set to ttl.
func CopyRecords(rrs []dns.RR, ttl uint32) []dns.RR {
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

func ttlSeconds(d time.Duration) uint32 {
	if d <= 0 {
		return 0
	}
	return uint32((d + time.Second - 1) / time.Second)
}

// lookup finds the cached answer to q for client: one every client shares,
// else one that belongs to client. A fresh entry wins over a stale one.
// It zeroes client unless q's route sends clients' addresses upstream; the
// route is looked up only past a fresh shared entry, the common hit.
func (r *Resolver) lookup(q dns.Question, do bool, client *netip.Addr) (*Entry, State) {
	e, st := r.store.Get(q, do)
	if st == Fresh {
		return e, st
	}
	if rt := r.route(q.Name); rt == nil || !rt.ClientSubnet || !client.IsValid() {
		*client = netip.Addr{}
		return e, st
	}
	if ce, cst := r.store.GetFor(q, do, *client); cst == Fresh || (cst == Stale && st == Miss) {
		return ce, cst
	}
	return e, st
}

// scopedTo returns the client an upstream answer belongs to: client when
// the answer's ECS option has a scope prefix longer than /0, else the zero
// Addr (every client shares it).
func scopedTo(m *dns.Msg, client netip.Addr) netip.Addr {
	if !client.IsValid() {
		return netip.Addr{}
	}
	if opt := m.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if s, ok := o.(*dns.EDNS0_SUBNET); ok && s.SourceScope > 0 {
				return client
			}
		}
	}
	return netip.Addr{}
}

// ClientSubnet is the ECS option that names one client: /32 or /128.
func ClientSubnet(client netip.Addr) *dns.EDNS0_SUBNET {
	s := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 32, Address: net.IP(client.AsSlice())}
	if client.Is6() {
		s.Family, s.SourceNetmask = 2, 128
	}
	return s
}

// fetch asks the zone's upstream, sharing one exchange among concurrent
// askers of the same question (and, with a client, of the same client).
// The first asker's ctx bounds the exchange, as does UpstreamTimeout.
func (r *Resolver) fetch(ctx context.Context, q dns.Question, do bool, client netip.Addr) (*dns.Msg, error) {
	v, err, _ := r.flight.Do(flightKey(q, do, client), func() (interface{}, error) {
		rt := r.route(q.Name)
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
			opt.Option = append(opt.Option, ClientSubnet(client))
		}
		ctx, cancel := context.WithTimeout(ctx, r.cfg.UpstreamTimeout)
		defer cancel()
		resp, err := rt.Upstream.Exchange(ctx, m)
		if err != nil {
			r.m.upstreamErrors.WithLabelValues(rt.Label).Inc()
			klog.V(2).InfoS("Upstream failed", "upstream", rt.Upstream.String(), "name", q.Name, "err", err)
			return nil, err
		}
		return resp, nil
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
func (r *Resolver) maybePrefetch(e *Entry, q dns.Question, do bool) {
	amount := r.cfg.Cache.PrefetchAmount
	if amount <= 0 {
		return
	}
	hits := e.hits.Add(1)
	if hits < int64(amount) {
		return
	}
	left := e.Remaining(r.cfg.Now())
	if int64(left)*100 > e.ttl*int64(r.cfg.Cache.PrefetchPercentage) {
		return
	}
	if !e.prefetching.CompareAndSwap(false, true) {
		return
	}
	select {
	case r.prefetchSem <- struct{}{}:
	default:
		e.prefetching.Store(false)
		return
	}
	q.Name = lowerASCII(q.Name)
	r.prefetches.add()
	go func() {
		defer r.prefetches.done()
		defer func() { <-r.prefetchSem }()
		m, err := r.fetch(context.Background(), q, do, e.client)
		if err != nil || m.Rcode == dns.RcodeServerFailure || m.Rcode == dns.RcodeRefused {
			// Keep the entry; it may be served stale later.
			e.prefetching.Store(false)
			return
		}
		r.m.prefetches.Inc()
		r.store.SetFor(q, do, scopedTo(m, e.client), m)
	}()
}

// flightKey is the question an upstream exchange answers, as the key of
// the single-flight group: name (lowercased), type, class, DO and the
// client whose address the exchange carries.
func flightKey(q dns.Question, do bool, client netip.Addr) string {
	return fmt.Sprintf("%s/%d/%d/%t/%s", lowerASCII(q.Name), q.Qtype, q.Qclass, do, client)
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

package forward

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Forwarder.
type Options struct {
	// Upstreams are "host:port" (or "host", port 53) servers, tried in turn.
	Upstreams []string
	// Timeout bounds one attempt at one upstream; default 2s.
	Timeout time.Duration
	// MaxTTL caps how long a positive answer is cached; default 30s.
	MaxTTL time.Duration
	// MaxNegativeTTL caps how long NXDOMAIN and NODATA are cached;
	// default 30s.
	MaxNegativeTTL time.Duration
	// CacheSize is the most answers kept; default 10000, negative disables
	// the cache.
	CacheSize int
}

// Forwarder sends queries upstream and caches the answers.
type Forwarder struct {
	opts      Options
	upstreams []string
	next      atomic.Uint32
	seed      maphash.Seed
	shards    [cacheShards]shard
	perShard  int

	hits, misses, failures prometheus.Counter
	now                    func() time.Time
}

const cacheShards = 16

type shard struct {
	mu sync.Mutex
	m  map[string]*entry
}

type entry struct {
	msg     *dns.Msg
	stored  time.Time
	expires time.Time
	ttl     uint32
}

// New returns a Forwarder; it fails when no upstream is given or one is
// malformed.
func New(o Options) (*Forwarder, error) {
	if len(o.Upstreams) == 0 {
		return nil, errors.New("forward: no upstream servers")
	}
	f := &Forwarder{opts: o, seed: maphash.MakeSeed(), now: time.Now}
	for _, u := range o.Upstreams {
		if _, _, err := net.SplitHostPort(u); err != nil {
			u = net.JoinHostPort(strings.Trim(u, "[]"), "53")
		}
		if _, _, err := net.SplitHostPort(u); err != nil {
			return nil, fmt.Errorf("forward: upstream %q: %w", u, err)
		}
		f.upstreams = append(f.upstreams, u)
	}
	if f.opts.Timeout <= 0 {
		f.opts.Timeout = 2 * time.Second
	}
	if f.opts.MaxTTL <= 0 {
		f.opts.MaxTTL = 30 * time.Second
	}
	if f.opts.MaxNegativeTTL <= 0 {
		f.opts.MaxNegativeTTL = 30 * time.Second
	}
	if f.opts.CacheSize == 0 {
		f.opts.CacheSize = 10000
	}
	f.perShard = max(1, f.opts.CacheSize/cacheShards)
	for i := range f.shards {
		f.shards[i].m = map[string]*entry{}
	}
	f.hits = prometheus.NewCounter(prometheus.CounterOpts{Name: "tpkit_dns_forward_cache_hits_total", Help: "Forwarded queries answered from the cache."})
	f.misses = prometheus.NewCounter(prometheus.CounterOpts{Name: "tpkit_dns_forward_cache_misses_total", Help: "Forwarded queries sent upstream."})
	f.failures = prometheus.NewCounter(prometheus.CounterOpts{Name: "tpkit_dns_forward_upstream_failures_total", Help: "Forwarded queries that no upstream answered."})
	return f, nil
}

// Register adds the cache and upstream metrics to reg.
func (f *Forwarder) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{f.hits, f.misses, f.failures} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Upstreams returns the upstream addresses in use.
func (f *Forwarder) Upstreams() []string { return append([]string(nil), f.upstreams...) }

// cacheKey is what makes two questions the same answer: the name, type,
// class, opcode, and the DO and CD bits (a DNSSEC-aware or checking-disabled
// client gets another answer).
func cacheKey(q dns.Question, opcode int, do, cd bool) string {
	var b strings.Builder
	b.Grow(len(q.Name) + 16)
	b.WriteString(strings.ToLower(q.Name))
	fmt.Fprintf(&b, "/%d/%d/%d/%t/%t", q.Qtype, q.Qclass, opcode, do, cd)
	return b.String()
}

// upstreamUDPSize is the EDNS payload size asked of upstreams, and so the
// largest UDP answer read: a larger one comes truncated and is fetched over
// TCP. It bounds the buffer each query in flight holds, whatever size the
// client asked for.
const upstreamUDPSize = 1232

// Resolve answers req from the cache or an upstream. The answer's ID and
// question are the caller's to set.
func (f *Forwarder) Resolve(ctx context.Context, req *dns.Msg) (*dns.Msg, error) {
	if len(req.Question) != 1 {
		return nil, errors.New("forward: a query has exactly one question")
	}
	if req.Opcode != dns.OpcodeQuery {
		return nil, fmt.Errorf("forward: opcode %s is not forwarded", dns.OpcodeToString[req.Opcode])
	}
	do := false
	if opt := req.IsEdns0(); opt != nil {
		do = opt.Do()
	}
	key := cacheKey(req.Question[0], req.Opcode, do, req.CheckingDisabled)
	if f.opts.CacheSize > 0 {
		if m := f.get(key); m != nil {
			f.hits.Inc()
			m.Id = req.Id
			return m, nil
		}
	}
	f.misses.Inc()
	resp, err := f.exchange(ctx, req)
	if err != nil {
		f.failures.Inc()
		return nil, err
	}
	if f.opts.CacheSize > 0 {
		f.put(key, resp)
	}
	return resp, nil
}

func (f *Forwarder) exchange(ctx context.Context, req *dns.Msg) (*dns.Msg, error) {
	q := req.Copy()
	q.Id = dns.Id()
	q.Compress = true
	if opt := q.IsEdns0(); opt != nil {
		opt.SetUDPSize(upstreamUDPSize)
	}
	start := int(f.next.Load())
	var last error
	for i := range f.upstreams {
		up := f.upstreams[(start+i)%len(f.upstreams)]
		resp, err := f.try(ctx, q, up)
		if err == nil {
			if i > 0 {
				f.next.Store(uint32((start + i) % len(f.upstreams)))
			}
			resp.Id = req.Id
			return resp, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("forward: no upstream answered %s: %w", req.Question[0].Name, last)
}

func (f *Forwarder) try(ctx context.Context, q *dns.Msg, up string) (*dns.Msg, error) {
	udpSize := uint16(dns.MinMsgSize)
	if q.IsEdns0() != nil {
		udpSize = upstreamUDPSize
	}
	c := &dns.Client{Net: "udp", Timeout: f.opts.Timeout, UDPSize: udpSize}
	resp, _, err := c.ExchangeContext(ctx, q, up)
	if err == nil && resp.Truncated {
		c = &dns.Client{Net: "tcp", Timeout: f.opts.Timeout}
		resp, _, err = c.ExchangeContext(ctx, q, up)
	}
	if err != nil {
		return nil, err
	}
	if resp.Id != q.Id {
		return nil, errors.New("forward: answer ID mismatch")
	}
	return resp, nil
}

func (f *Forwarder) shard(key string) *shard {
	return &f.shards[maphash.String(f.seed, key)%cacheShards]
}

// ttlOf is how long resp may be cached; 0 means not at all.
func (f *Forwarder) ttlOf(resp *dns.Msg) time.Duration {
	if resp.Truncated {
		return 0
	}
	switch {
	case resp.Rcode == dns.RcodeSuccess && len(resp.Answer) > 0:
		ttl := uint32(1<<31 - 1)
		for _, rr := range resp.Answer {
			ttl = min(ttl, rr.Header().Ttl)
		}
		return min(time.Duration(ttl)*time.Second, f.opts.MaxTTL)
	case resp.Rcode == dns.RcodeNameError || (resp.Rcode == dns.RcodeSuccess && len(resp.Answer) == 0):
		for _, rr := range resp.Ns {
			if soa, ok := rr.(*dns.SOA); ok {
				ttl := min(soa.Hdr.Ttl, soa.Minttl)
				return min(time.Duration(ttl)*time.Second, f.opts.MaxNegativeTTL)
			}
		}
	}
	return 0
}

func (f *Forwarder) put(key string, resp *dns.Msg) {
	ttl := f.ttlOf(resp)
	if ttl < time.Second {
		return
	}
	now := f.now()
	e := &entry{msg: resp.Copy(), stored: now, expires: now.Add(ttl), ttl: uint32(ttl / time.Second)}
	s := f.shard(key)
	s.mu.Lock()
	if _, ok := s.m[key]; !ok && len(s.m) >= f.perShard {
		for k, old := range s.m { // evict an expired entry, else any
			if now.After(old.expires) {
				delete(s.m, k)
				break
			}
		}
		if len(s.m) >= f.perShard {
			for k := range s.m {
				delete(s.m, k)
				break
			}
		}
	}
	s.m[key] = e
	s.mu.Unlock()
}

func (f *Forwarder) get(key string) *dns.Msg {
	s := f.shard(key)
	s.mu.Lock()
	e := s.m[key]
	now := f.now()
	if e != nil && !now.Before(e.expires) {
		delete(s.m, key)
		e = nil
	}
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	elapsed := uint32(now.Sub(e.stored) / time.Second)
	left := e.ttl - min(elapsed, e.ttl)
	m := e.msg.Copy()
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			h := rr.Header()
			if h.Rrtype == dns.TypeOPT {
				continue
			}
			h.Ttl = min(h.Ttl, left)
		}
	}
	return m
}

// UpstreamsFromResolvConf reads the nameservers of a resolv.conf file.
func UpstreamsFromResolvConf(path string) ([]string, error) {
	cfg, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var out []string
	for _, s := range cfg.Servers {
		out = append(out, net.JoinHostPort(s, cfg.Port))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s lists no nameserver", path)
	}
	return out, nil
}

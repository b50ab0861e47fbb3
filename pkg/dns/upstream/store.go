package upstream

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// Kind is the class of a cached answer.
type Kind int

// Kinds of answers.
const (
	// Uncacheable answers (SERVFAIL, REFUSED, truncated, TTL 0) are never stored.
	Uncacheable Kind = iota
	// Success is NOERROR with records in the answer section.
	Success
	// Denial is NXDOMAIN, or NOERROR without answers (NODATA).
	Denial
)

func (k Kind) String() string {
	switch k {
	case Success:
		return "success"
	case Denial:
		return "denial"
	}
	return "uncacheable"
}

// Config sizes and times the cache.
type Config struct {
	// SuccessCapacity and DenialCapacity bound the number of entries of
	// each kind.
	SuccessCapacity, DenialCapacity int
	// SuccessTTL and DenialTTL cap how long an entry is fresh.
	SuccessTTL, DenialTTL time.Duration
	// PrefetchAmount is how many hits during its TTL make an entry popular;
	// 0 disables prefetching.
	PrefetchAmount int
	// PrefetchPercentage is how much of the TTL (in percent) is left when
	// a popular entry is refreshed.
	PrefetchPercentage int
	// ServeStale is how long after expiry an entry may still be served when
	// the upstream fails; 0 disables stale answers.
	ServeStale time.Duration
	// StaleTTL is the TTL of a stale answer (RFC 8767 suggests 30 s).
	StaleTTL time.Duration
}

// DefaultConfig is the KEP's cache: success 9984 / 30 s, denial 9984 / 5 s,
// prefetch after 2 hits at 10 % TTL left, stale answers up to 1 h.
func DefaultConfig() Config {
	return Config{
		SuccessCapacity: 9984, SuccessTTL: 30 * time.Second,
		DenialCapacity: 9984, DenialTTL: 5 * time.Second,
		PrefetchAmount: 2, PrefetchPercentage: 10,
		ServeStale: time.Hour, StaleTTL: 30 * time.Second,
	}
}

// State is the result of a lookup.
type State int

// Lookup states.
const (
	Miss State = iota
	Fresh
	Stale
)

// Entry is one cached answer. Its sections are shared and read-only.
type Entry struct {
	name   string // lower case
	qtype  uint16
	qclass uint16
	do     bool
	// client is the pod an answer with a longer ECS scope belongs to; the
	// zero Addr for answers every client shares.
	client netip.Addr

	Kind   Kind
	Rcode  int
	Answer []dns.RR
	Ns     []dns.RR
	Extra  []dns.RR // without OPT

	stored  int64 // unix nanos
	ttl     int64 // capped TTL, nanos
	expires int64 // stored + ttl

	hits        atomic.Int64
	prefetching atomic.Bool

	plain, edns *template // packed answers for the hit path (wire.go)
}

// Remaining returns the fresh time left at now (negative when expired).
func (e *Entry) Remaining(now time.Time) time.Duration {
	return time.Duration(e.expires - now.UnixNano())
}

// TTL returns the capped TTL the entry was stored with.
func (e *Entry) TTL() time.Duration { return time.Duration(e.ttl) }

type shard struct {
	mu    sync.RWMutex
	m     map[uint64]*Entry
	count [3]int
	limit [3]int // by kind; the shards' limits add up to the capacities
}

// Store is the bounded cache of answers. Safe for concurrent use.
type Store struct {
	cfg    Config
	now    func() time.Time
	shards []shard

	evictions [3]atomic.Int64
}

// NewStore returns an empty store; now is the clock (time.Now when nil).
func NewStore(cfg Config, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	n := 64
	if cfg.SuccessCapacity < 256 || cfg.DenialCapacity < 256 {
		// Small caches (tests, tiny nodes) get exact capacities.
		n = 1
	}
	s := &Store{cfg: cfg, now: now, shards: make([]shard, n)}
	split := func(capacity, i int) int {
		if capacity <= 0 {
			return 0
		}
		l := capacity / n
		if i < capacity%n {
			l++
		}
		return l
	}
	for i := range s.shards {
		s.shards[i].m = map[uint64]*Entry{}
		s.shards[i].limit[Success] = split(cfg.SuccessCapacity, i)
		s.shards[i].limit[Denial] = split(cfg.DenialCapacity, i)
	}
	return s
}

// hash is FNV-1a over the lower-cased name, type, class, DO bit and the
// client an entry belongs to (if any). It does not allocate; entries are
// compared in full on lookup, so collisions only cost a miss.
func hash(name string, qtype, qclass uint16, do bool, client netip.Addr) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h = (h ^ uint64(c)) * prime
	}
	h = (h ^ uint64(qtype)) * prime
	h = (h ^ uint64(qtype>>8)) * prime
	h = (h ^ uint64(qclass)) * prime
	if do {
		h = (h ^ 1) * prime
	}
	if client.IsValid() {
		for _, c := range client.As16() {
			h = (h ^ uint64(c)) * prime
		}
	}
	return h
}

func equalFoldASCII(a, lower string) bool {
	if len(a) != len(lower) {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func (s *Store) shardFor(h uint64) *shard { return &s.shards[h%uint64(len(s.shards))] }

// Get looks up the answer to a question that every client shares. A Stale
// entry is expired but inside the serve-stale window; past the window an
// entry is a Miss.
func (s *Store) Get(q dns.Question, do bool) (*Entry, State) {
	return s.GetFor(q, do, netip.Addr{})
}

// GetFor is Get for the answer that belongs to client alone (one the
// upstream gave an ECS scope longer than /0); the zero client is Get.
func (s *Store) GetFor(q dns.Question, do bool, client netip.Addr) (*Entry, State) {
	h := hash(q.Name, q.Qtype, q.Qclass, do, client)
	sh := s.shardFor(h)
	sh.mu.RLock()
	e := sh.m[h]
	sh.mu.RUnlock()
	if e == nil || e.qtype != q.Qtype || e.qclass != q.Qclass || e.do != do || e.client != client || !equalFoldASCII(q.Name, e.name) {
		return nil, Miss
	}
	now := s.now().UnixNano()
	switch {
	case now < e.expires:
		return e, Fresh
	case now < e.expires+int64(s.cfg.ServeStale):
		return e, Stale
	}
	return nil, Miss
}

// Classify returns the kind of an upstream answer and its TTL before
// capping: the smallest TTL of its records, or for a denial the SOA's
// negative TTL (RFC 2308) when there is one.
func Classify(m *dns.Msg) (Kind, uint32) {
	if m == nil || m.Truncated {
		return Uncacheable, 0
	}
	var kind Kind
	switch {
	case m.Rcode == dns.RcodeSuccess && len(m.Answer) > 0:
		kind = Success
	case m.Rcode == dns.RcodeNameError, m.Rcode == dns.RcodeSuccess:
		kind = Denial
	default:
		return Uncacheable, 0
	}
	// A denial without records (no SOA) keeps this and is capped later.
	minTTL := uint32(1<<31 - 1)
	consider := func(rrs []dns.RR) {
		for _, rr := range rrs {
			if rr.Header().Rrtype == dns.TypeOPT {
				continue
			}
			ttl := rr.Header().Ttl
			if soa, ok := rr.(*dns.SOA); ok && kind == Denial && soa.Minttl < ttl {
				ttl = soa.Minttl
			}
			if ttl < minTTL {
				minTTL = ttl
			}
		}
	}
	consider(m.Answer)
	consider(m.Ns)
	consider(m.Extra)
	return kind, minTTL
}

// Set stores an upstream answer to q that every client shares, replacing
// any entry for q. It returns the kind stored, or Uncacheable when nothing
// was stored.
func (s *Store) Set(q dns.Question, do bool, m *dns.Msg) (*Entry, Kind) {
	return s.SetFor(q, do, netip.Addr{}, m)
}

// SetFor is Set for an answer that belongs to client alone; the zero client
// is Set. Such entries count against the same capacities.
func (s *Store) SetFor(q dns.Question, do bool, client netip.Addr, m *dns.Msg) (*Entry, Kind) {
	kind, ttlSec := Classify(m)
	if kind == Uncacheable {
		return nil, kind
	}
	limit := s.cfg.SuccessTTL
	if kind == Denial {
		limit = s.cfg.DenialTTL
	}
	ttl := time.Duration(ttlSec) * time.Second
	if ttl > limit {
		ttl = limit
	}
	if ttl <= 0 {
		return nil, Uncacheable
	}
	now := s.now().UnixNano()
	e := &Entry{
		name: lowerASCII(q.Name), qtype: q.Qtype, qclass: q.Qclass, do: do, client: client,
		Kind: kind, Rcode: m.Rcode, Answer: m.Answer, Ns: m.Ns,
		stored: now, ttl: int64(ttl), expires: now + int64(ttl),
	}
	for _, rr := range m.Extra {
		if rr.Header().Rrtype != dns.TypeOPT {
			e.Extra = append(e.Extra, rr)
		}
	}
	e.plain, e.edns = buildTemplate(e, false), buildTemplate(e, true)
	h := hash(q.Name, q.Qtype, q.Qclass, do, client)
	sh := s.shardFor(h)
	sh.mu.Lock()
	if old := sh.m[h]; old != nil {
		sh.count[old.Kind]--
		delete(sh.m, h)
	}
	if sh.limit[kind] <= 0 {
		sh.mu.Unlock()
		return nil, Uncacheable
	}
	if sh.count[kind] >= sh.limit[kind] {
		s.evictLocked(sh, kind, now)
	}
	sh.m[h] = e
	sh.count[kind]++
	sh.mu.Unlock()
	return e, kind
}

// evictLocked removes one entry of kind: the first one past its stale
// window among a few looked at, else the first one seen. Map iteration
// starts at a random place, so the choice is random.
func (s *Store) evictLocked(sh *shard, kind Kind, now int64) {
	var victim uint64
	found, looked := false, 0
	for k, e := range sh.m {
		if e.Kind != kind {
			continue
		}
		if !found {
			victim, found = k, true
		}
		if now >= e.expires+int64(s.cfg.ServeStale) {
			victim = k
			break
		}
		if looked++; looked >= 8 {
			break
		}
	}
	if found {
		delete(sh.m, victim)
		sh.count[kind]--
		s.evictions[kind].Add(1)
	}
}

// Len returns the number of entries of kind.
func (s *Store) Len(kind Kind) int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += sh.count[kind]
		sh.mu.RUnlock()
	}
	return n
}

// Evictions returns how many entries of kind were evicted for space.
func (s *Store) Evictions(kind Kind) int64 { return s.evictions[kind].Load() }

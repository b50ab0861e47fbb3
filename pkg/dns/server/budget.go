package server

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"
)

// sourceBudget is each client's budget of queries for names outside the
// zones: a token bucket per source address (GCRA, one int64 per source),
// refilled at rate tokens a second up to burst, in a table of fixed size.
// It is consulted only while the forwarding pool is contended (see
// Handler.admitForward), as BIND's recursive-clients and Unbound's request
// list limit what one client may hold when the resolver is busy.
//
// The table holds budgetSets × budgetWays sources. A source not in it takes
// the place of the least recently seen one of its set and starts with a full
// bucket: being pushed out only ever gives a source more, never less, so a
// flood of many addresses cannot make a quiet client lose a query. The sets
// are chosen by a seeded hash, so an attacker cannot aim at one.
//
// take allocates nothing; each set has its own lock, held for a lookup.
type sourceBudget struct {
	// interval is the time one token takes to come back, tolerance how far
	// a source's theoretical arrival time may run ahead of now:
	// (burst-1) × interval.
	interval, tolerance int64
	// now is the monotonic clock in nanoseconds; tests set a fake one.
	now  func() int64
	seed uint64
	sets [budgetSets]budgetSet
}

const (
	budgetWays = 8
	budgetSets = 512 // a power of two; 4096 sources in all
)

type budgetSet struct {
	mu      sync.Mutex
	entries [budgetWays]budgetEntry
}

// budgetEntry is one source's bucket.
type budgetEntry struct {
	key  [16]byte // the address, IPv4 as IPv4-mapped IPv6
	used bool
	// tat is the theoretical arrival time (GCRA): the bucket is full when
	// tat <= now, and empty when tat > now + tolerance.
	tat int64
	// seen is the last time the source asked, for eviction.
	seen int64
}

// clockStart anchors the monotonic clock of monoNow.
var clockStart = time.Now()

func monoNow() int64 { return int64(time.Since(clockStart)) }

// newSourceBudget returns a budget of rate queries a second with bursts of
// burst (at least 1).
func newSourceBudget(rate float64, burst int) *sourceBudget {
	if burst < 1 {
		burst = 1
	}
	iv := int64(float64(time.Second) / rate)
	if iv < 1 {
		iv = 1
	}
	return &sourceBudget{interval: iv, tolerance: int64(burst-1) * iv, now: monoNow, seed: rand.Uint64()}
}

// take spends one of src's tokens and reports whether there was one. An
// empty bucket is not charged further: while it stays empty a source gets
// exactly rate queries a second through, however fast it asks.
func (b *sourceBudget) take(src netip.Addr) bool {
	k := src.As16()
	now := b.now()
	s := &b.sets[b.hash(&k)&(budgetSets-1)]
	s.mu.Lock()
	e := s.lookup(&k, now)
	e.seen = now
	ok := e.tat-now <= b.tolerance
	if ok {
		e.tat = max(e.tat, now) + b.interval
	}
	s.mu.Unlock()
	return ok
}

// lookup returns k's entry in s, taking an unused one or the least
// recently seen one (with a full bucket) when k has none.
func (s *budgetSet) lookup(k *[16]byte, now int64) *budgetEntry {
	victim := &s.entries[0]
	for i := range s.entries {
		e := &s.entries[i]
		if !e.used {
			victim = e
			break
		}
		if e.key == *k {
			return e
		}
		if e.seen < victim.seen {
			victim = e
		}
	}
	// A full bucket for the newcomer. Its key is the full address: pods
	// have one address each, and a node's pods share a prefix.
	*victim = budgetEntry{key: *k, used: true, tat: now, seen: now}
	return victim
}

// hash picks k's set.
func (b *sourceBudget) hash(k *[16]byte) uint64 {
	x := binary.LittleEndian.Uint64(k[:8]) ^ b.seed
	x = mix64(x) ^ binary.LittleEndian.Uint64(k[8:])
	return mix64(x)
}

// mix64 is splitmix64's finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

package index

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
)

// shards is the number of shards of an addrMap, in groups of fanout. At
// 600k objects a shard holds about 120 addresses, so a publish of a few
// changes copies a few kilobytes per change: with 1024 shards of 20 KB, the
// shard copies of a steady 500 changes a second were half of what the
// index allocated, and garbage at that rate keeps the collector marking the
// whole index.
const (
	shards = 4096
	fanout = 64
	groups = shards / fanout
)

func shardOf(a netip.Addr) int {
	b := a.As16()
	return (int(b[14])<<8 | int(b[15]) ^ int(b[11])<<2 ^ int(b[13])<<5 ^ int(b[12])<<9) & (shards - 1)
}

// addrMap maps addresses to owners (PTR or srcOwner). It is split in shards,
// held in groups, so that a publish copies only the shards it changes, the
// groups that hold them (512 bytes each) and the map itself (512 bytes); a
// nil group or shard is empty. The second level costs a lookup one more
// load from a small, hot array, where one flat array of 4096 pointers would
// cost every publish 32 KB per map.
type addrMap[V any] [groups]*shardGroup[V]

type shardGroup[V any] [fanout]*addrShard[V]

func (m *addrMap[V]) shard(i int) *addrShard[V] {
	if g := m[i/fanout]; g != nil {
		return g[i%fanout]
	}
	return nil
}

// addrShard is an immutable sorted table: addrs[i]'s values are
// vals[offs[i]:offs[i+1]]. Three flat arrays instead of a Go map save its
// slot, load-factor and per-value overhead: for 75k addresses, about 4 MB
// instead of 13 MB.
type addrShard[V any] struct {
	addrs []addrKey
	offs  []uint32 // len(addrs)+1 once non-empty
	vals  []V
}

// addrKey is an address as the tables keep it: 16 bytes where a
// netip.Addr takes 24, and no pointer for the collector to follow. An IPv4
// address is kept as its IPv4-mapped IPv6 form; the index holds no
// IPv4-mapped address of its own (pkg/dns/source unmaps them).
type addrKey struct{ hi, lo uint64 }

func keyOf(a netip.Addr) addrKey {
	b := a.As16()
	return addrKey{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// addr is the address k keys: an IPv4 one for an IPv4-mapped key.
func (k addrKey) addr() netip.Addr {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], k.hi)
	binary.BigEndian.PutUint64(b[8:], k.lo)
	return netip.AddrFrom16(b).Unmap()
}

func (k addrKey) compare(o addrKey) int {
	if c := cmp.Compare(k.hi, o.hi); c != 0 {
		return c
	}
	return cmp.Compare(k.lo, o.lo)
}

func (s *addrShard[V]) get(a netip.Addr) []V {
	if s == nil || a.Is4In6() {
		return nil // the key of an IPv4 address, which a is not
	}
	i, ok := slices.BinarySearchFunc(s.addrs, keyOf(a), addrKey.compare)
	if !ok {
		return nil
	}
	lo, hi := s.offs[i], s.offs[i+1]
	return s.vals[lo:hi:hi]
}

// get returns a's values; the caller must not change them.
func (m *addrMap[V]) get(a netip.Addr) []V { return m.shard(shardOf(a)).get(a) }

// len is the number of addresses.
func (m *addrMap[V]) len() int {
	n := 0
	for i := range shards {
		if s := m.shard(i); s != nil {
			n += len(s.addrs)
		}
	}
	return n
}

// addrEdits collects a publish's changes to an addrMap and then writes new
// shards for those it changed; the old map is never touched.
type addrEdits[V any] struct {
	old   *addrMap[V]
	edits map[int]map[netip.Addr][]V // by shard; an empty value deletes the address
	chunk []V                        // where alloc takes values from
	// cloned marks the groups of the map being written that are its own
	// copies, which applyTo may change in place.
	cloned [groups]bool
}

// editChunk is the most values alloc takes from the heap at once.
const editChunk = 4096

// alloc returns an empty slice with room for n values. Edits are dropped
// once applied, so they come from a few large chunks: tens of thousands of
// small short-lived slices would otherwise be strewn among the index's
// long-lived objects of the same size, and keep their memory spans in use
// after they are collected.
func (e *addrEdits[V]) alloc(n int) []V {
	if n > editChunk/8 {
		return make([]V, 0, n)
	}
	if cap(e.chunk)-len(e.chunk) < n {
		// Chunks grow from small: most publishes edit a few addresses,
		// and a full chunk for each (96 KB of PTRs) was most of what a
		// publish allocated under steady churn.
		e.chunk = make([]V, 0, min(max(2*cap(e.chunk), 8*n, 64), editChunk))
	}
	l := len(e.chunk)
	e.chunk = e.chunk[:l+n]
	return e.chunk[l : l : l+n]
}

func (e *addrEdits[V]) get(a netip.Addr) []V {
	i := shardOf(a)
	if v, ok := e.edits[i][a]; ok {
		return v
	}
	return e.old.shard(i).get(a)
}

// set makes v a's values; v is owned by e from then on.
func (e *addrEdits[V]) set(a netip.Addr, v []V) {
	i := shardOf(a)
	if e.edits == nil {
		e.edits = map[int]map[netip.Addr][]V{}
	}
	if e.edits[i] == nil {
		e.edits[i] = map[netip.Addr][]V{}
	}
	e.edits[i][a] = v
}

// apply returns the old map with the edits applied; unchanged shards and
// groups are shared.
func (e *addrEdits[V]) apply() addrMap[V] {
	out := *e.old
	e.applyTo(&out, 0, shards)
	return out
}

// changed is the number of shards the edits change.
func (e *addrEdits[V]) changed() int { return len(e.edits) }

// applyTo writes into m, a copy of the old map, the new shards of the
// edited shards in [lo, hi), and drops their edits; lo and hi are
// multiples of fanout. It reports whether it wrote any. A group is copied
// the first time one of its shards is written, and changed in place after
// that: m must not be published until the group's shards are all written,
// which holds for the steps of storeAddrs, each a range of whole groups.
func (e *addrEdits[V]) applyTo(m *addrMap[V], lo, hi int) bool {
	wrote := false
	for i, ed := range e.edits {
		if i < lo || i >= hi {
			continue
		}
		g := i / fanout
		if !e.cloned[g] {
			c := new(shardGroup[V])
			if m[g] != nil {
				*c = *m[g]
			}
			m[g], e.cloned[g] = c, true
		}
		m[g][i%fanout] = merge(m[g][i%fanout], ed)
		delete(e.edits, i)
		wrote = true
	}
	return wrote
}

// merge writes a new shard: old's entries with ed's replacing, adding or
// (when empty) deleting theirs.
func merge[V any](old *addrShard[V], ed map[netip.Addr][]V) *addrShard[V] {
	if old == nil {
		old = &addrShard[V]{}
	}
	type edit struct {
		k addrKey
		v []V
	}
	edits := make([]edit, 0, len(ed))
	for a, v := range ed {
		edits = append(edits, edit{keyOf(a), v})
	}
	slices.SortFunc(edits, func(x, y edit) int { return x.k.compare(y.k) })
	n, nv := len(old.addrs), len(old.vals)
	for _, e := range edits {
		nv += len(e.v)
		if _, found := slices.BinarySearchFunc(old.addrs, e.k, addrKey.compare); !found {
			n++
		}
	}
	out := &addrShard[V]{addrs: make([]addrKey, 0, n), offs: make([]uint32, 1, n+1), vals: make([]V, 0, nv)}
	add := func(a addrKey, v []V) {
		if len(v) == 0 {
			return
		}
		out.addrs = append(out.addrs, a)
		out.vals = append(out.vals, v...)
		out.offs = append(out.offs, uint32(len(out.vals)))
	}
	i := 0
	for _, e := range edits {
		for ; i < len(old.addrs) && old.addrs[i].compare(e.k) < 0; i++ {
			add(old.addrs[i], old.vals[old.offs[i]:old.offs[i+1]])
		}
		if i < len(old.addrs) && old.addrs[i] == e.k {
			i++ // replaced
		}
		add(e.k, e.v)
	}
	for ; i < len(old.addrs); i++ {
		add(old.addrs[i], old.vals[old.offs[i]:old.offs[i+1]])
	}
	if len(out.addrs) == 0 {
		return nil
	}
	return out
}

package index

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
)

// shards is the number of shards of an addrMap, in groups of fanout: with
// 1024 shards of 20 KB at 600k objects, the shard copies of a steady 500
// changes a second were half of what the index allocated, and garbage at
// that rate keeps the collector marking the whole index. A shard is cut in
// blocks (addrShard), so that what a change copies stays small however
// many addresses a shard holds.
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

// addrShard is an immutable sorted table of addresses and their values,
// cut into blocks of at most maxBlock addresses: a change copies its block
// and the shard's list of blocks, not the whole shard. At 1.5M objects a
// shard holds about 320 addresses; copying all of them for each change
// (14 KB, and three pointers an address for the collector's write barrier
// while it marks) was most of what steady churn allocated, and made a
// publish during a collection take 30-200 ms.
type addrShard[V any] struct {
	blocks []*addrBlock[V] // in address order; none empty
}

// addrBlock is a sorted run of addresses: addrs[i]'s values are
// vals[offs[i]:offs[i+1]]. Three flat arrays instead of a Go map save its
// slot, load-factor and per-value overhead: for 75k addresses, about 4 MB
// instead of 13 MB.
type addrBlock[V any] struct {
	addrs []addrKey
	offs  []uint32 // len(addrs)+1
	vals  []V
}

// A merge cuts a run of more than maxBlock addresses into blocks of at
// least maxBlock/2, and joins a block left with fewer than minBlock to its
// neighbour, so that every block of a shard with more than one has between
// minBlock and maxBlock addresses.
const (
	maxBlock = 64
	minBlock = 16
)

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
	k := keyOf(a)
	// The last block whose first address is not after k.
	j, _ := slices.BinarySearchFunc(s.blocks, k, func(b *addrBlock[V], k addrKey) int {
		if b.addrs[0].compare(k) <= 0 {
			return -1
		}
		return 1
	})
	if j == 0 {
		return nil
	}
	b := s.blocks[j-1]
	i, ok := slices.BinarySearchFunc(b.addrs, k, addrKey.compare)
	if !ok {
		return nil
	}
	return b.entry(i).v
}

// len is the number of addresses.
func (s *addrShard[V]) len() int {
	n := 0
	if s != nil {
		for _, b := range s.blocks {
			n += len(b.addrs)
		}
	}
	return n
}

// get returns a's values; the caller must not change them.
func (m *addrMap[V]) get(a netip.Addr) []V { return m.shard(shardOf(a)).get(a) }

// len is the number of addresses.
func (m *addrMap[V]) len() int {
	n := 0
	for i := range shards {
		n += m.shard(i).len()
	}
	return n
}

// addrEdits collects a publish's changes to an addrMap and then writes new
// shards for those it changed; the old map is never touched.
type addrEdits[V any] struct {
	old   *addrMap[V]
	edits map[int]map[netip.Addr][]V // by shard; an empty value deletes the address
	chunk []V                        // where alloc takes values from
	run   []addrEntry[V]             // merge's, kept for the next
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
		m[g][i%fanout] = merge(m[g][i%fanout], ed, &e.run)
		delete(e.edits, i)
		wrote = true
	}
	return wrote
}

// merge writes a new shard: old's entries with ed's replacing, adding or
// (when empty) deleting theirs. Only the blocks that ed changes are
// written; the others are shared with old. scratch holds the entries of
// the blocks being rewritten, and the edits, from one merge to the next.
func merge[V any](old *addrShard[V], ed map[netip.Addr][]V, scratch *[]addrEntry[V]) *addrShard[V] {
	// The edits, then a run: a small block, the next one, and the edits.
	if need := 2*len(ed) + minBlock + maxBlock; cap(*scratch) < need {
		*scratch = make([]addrEntry[V], 0, need)
	}
	edits := (*scratch)[:0]
	for a, v := range ed {
		edits = append(edits, addrEntry[V]{keyOf(a), v})
	}
	slices.SortFunc(edits, func(x, y addrEntry[V]) int { return x.k.compare(y.k) })
	all := edits
	var blocks []*addrBlock[V]
	if old != nil {
		blocks = old.blocks
	}
	out := make([]*addrBlock[V], 0, len(blocks)+len(edits)/maxBlock+1)
	// run holds the entries of the blocks being rewritten: a changed
	// block's, with a small one's before it that joins it. It follows the
	// edits in scratch.
	run := edits[len(edits):]
	for i, b := range blocks {
		// The edits before the next block's first address are this
		// block's; the first block also takes those before its own.
		n := len(edits)
		if i+1 < len(blocks) {
			n, _ = slices.BinarySearchFunc(edits, blocks[i+1].addrs[0], func(e addrEntry[V], k addrKey) int { return e.k.compare(k) })
		}
		if n == 0 && len(run) == 0 {
			out = append(out, b)
			continue
		}
		run = b.mergeInto(run, edits[:n])
		edits = edits[n:]
		if len(run) < minBlock {
			if i+1 < len(blocks) {
				continue // joins the next block
			}
			if len(run) > 0 && len(out) > 0 {
				// A small last run joins the block before it.
				prev := out[len(out)-1]
				out = out[:len(out)-1]
				run = append(prev.mergeInto(nil, nil), run...)
			}
		}
		out, run = cutBlocks(out, run), run[:0]
	}
	if len(blocks) == 0 {
		run = (*addrBlock[V])(nil).mergeInto(run, edits)
		out = cutBlocks(out, run)
	}
	*scratch = all[:0]
	if cap(run) > cap(all) {
		*scratch = run[:0] // grown apart from the edits
	}
	if len(out) == 0 {
		return nil
	}
	return &addrShard[V]{blocks: out}
}

// addrEntry is an address and its values, while a merge rewrites blocks.
type addrEntry[V any] struct {
	k addrKey
	v []V
}

// mergeInto appends to run b's entries (none for a nil b) with the sorted
// edits replacing, adding or (when empty) deleting theirs.
func (b *addrBlock[V]) mergeInto(run []addrEntry[V], edits []addrEntry[V]) []addrEntry[V] {
	var addrs []addrKey
	if b != nil {
		addrs = b.addrs
	}
	add := func(e addrEntry[V]) {
		if len(e.v) > 0 {
			run = append(run, e)
		}
	}
	i := 0
	for _, e := range edits {
		for ; i < len(addrs) && addrs[i].compare(e.k) < 0; i++ {
			add(b.entry(i))
		}
		if i < len(addrs) && addrs[i] == e.k {
			i++ // replaced
		}
		add(e)
	}
	for ; i < len(addrs); i++ {
		add(b.entry(i))
	}
	return run
}

func (b *addrBlock[V]) entry(i int) addrEntry[V] {
	lo, hi := b.offs[i], b.offs[i+1]
	return addrEntry[V]{b.addrs[i], b.vals[lo:hi:hi]}
}

// cutBlocks appends to out the blocks of run: one for at most maxBlock
// entries, else as few as hold them, of equal sizes.
func cutBlocks[V any](out []*addrBlock[V], run []addrEntry[V]) []*addrBlock[V] {
	parts := (len(run) + maxBlock - 1) / maxBlock
	for p := range parts {
		part := run[p*len(run)/parts : (p+1)*len(run)/parts]
		nv := 0
		for _, e := range part {
			nv += len(e.v)
		}
		b := &addrBlock[V]{addrs: make([]addrKey, 0, len(part)), offs: make([]uint32, 1, len(part)+1), vals: make([]V, 0, nv)}
		for _, e := range part {
			b.addrs = append(b.addrs, e.k)
			b.vals = append(b.vals, e.v...)
			b.offs = append(b.offs, uint32(len(b.vals)))
		}
		out = append(out, b)
	}
	return out
}

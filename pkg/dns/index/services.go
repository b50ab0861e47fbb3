package index

import (
	"cmp"
	"iter"
	"math/bits"
	"slices"
	"strings"
)

// serviceList is a namespace's services, sorted by the hash of their name
// (then by name) and cut by hash into blocks: block k holds the services
// whose hash starts with k's bits. A lookup picks its block from the hash,
// searches that block's entries (a hash and its view's pointer, so that the
// cache line that held the hash holds the pointer) and reads one view to
// confirm. A Go map took about 40 bytes a service; a list sorted by name,
// 8, but its search followed a pointer to a name at every step, which cost
// a busy server a tenth of its CPU.
//
// Blocks are what a change copies. Adding a service to a namespace of
// 1,000 copied all 16 KB of a flat list, and at 500 changes a second that
// copying was a third of partition-dns's garbage.
type serviceList struct {
	// one is the block of a list of one block (most namespaces have a few
	// services), kept in place so that a lookup reads no array of blocks;
	// blocks is nil then. A longer list is in blocks.
	one    svcBlock
	blocks []svcBlock
	// shift is 64 less the bits of a hash that pick its block: the service
	// of hash h is in block h>>shift. With one block it is 64, and h>>64
	// is 0.
	shift uint8
	// n is the number of services, the blocks' lengths summed: kept, so
	// that a count or an emptiness test reads no block.
	n int
}

// block returns block k.
func (l *serviceList) block(k int) svcBlock {
	if l.blocks == nil {
		return l.one
	}
	return l.blocks[k]
}

// blockCount is the number of blocks: 0 for an empty list.
func (l *serviceList) blockCount() int {
	switch {
	case l.blocks != nil:
		return len(l.blocks)
	case l.n > 0:
		return 1
	}
	return 0
}

// svcBlock is one block of a serviceList. Its entries are never changed
// once published; an edit makes new ones.
type svcBlock []svcEntry

type svcEntry struct {
	hash uint64 // nameHash(view.Name)
	view *ServiceView
}

// An edit that leaves a list with more than blockMax services a block on
// average, or fewer than blockMin (and more than one block), cuts it again
// into blocks of blockTarget or fewer. A block of blockTarget services
// copies about 1 KB when it changes; the array of blocks copies 24 bytes a
// block.
const (
	blockTarget = 64
	blockMin    = 16
	blockMax    = 128
)

// nameHash is FNV-1a, 64 bits: quick on the short names services have,
// and the same in every process.
func nameHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// find returns the block of service name and its index there, or the
// index where it would go.
func (l *serviceList) find(name string) (k, i int, found bool) {
	if l.n == 0 {
		return 0, 0, false
	}
	h := nameHash(name)
	k, lo, b := l.seek(h)
	for i := lo; i < len(b) && b[i].hash == h; i++ {
		if b[i].view.Name == name {
			return k, i, true
		}
	}
	return k, lo, false
}

// seek returns the block k of hash h and, in it, the first index whose
// hash is h or more. The list must not be empty.
func (l *serviceList) seek(h uint64) (k, lo int, b svcBlock) {
	k = int(h >> l.shift)
	b = l.block(k)
	lo, hi := bracket(b, h, h<<(64-l.shift))
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b[m].hash < h {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return k, lo, b
}

// withHash returns the entries of the services whose name hashes to h:
// nearly always one or none.
func (l *serviceList) withHash(h uint64) []svcEntry {
	if l.n == 0 {
		return nil
	}
	_, lo, b := l.seek(h)
	hi := lo
	for hi < len(b) && b[hi].hash == h {
		hi++
	}
	return b[lo:hi]
}

// bracket returns a range [lo, hi) of b that holds the first index whose
// hash is h or more (or hi = len, when there is none). rel is h less
// the bits that chose the block, shifted to the top. The hashes of a block
// are spread evenly over its share of the 64 bits, so that index is close
// to len·rel/2⁶⁴: a search that starts there and widens by doubling steps
// reads a cache line or two, where a binary search of a long block read
// one line per step.
func bracket(b svcBlock, h, rel uint64) (lo, hi int) {
	n := len(b)
	if n < bracketMin {
		return 0, n
	}
	g, _ := bits.Mul64(rel, uint64(n))
	i := int(g) // in [0, n)
	if b[i].hash < h {
		lo = i + 1
		for step := 1; ; step *= 2 {
			j := i + step
			if j >= n {
				return lo, n
			}
			if b[j].hash >= h {
				return lo, j + 1
			}
			lo = j + 1
		}
	}
	hi = i + 1
	for step := 1; ; step *= 2 {
		j := i - step
		if j < 0 {
			return 0, hi
		}
		if b[j].hash < h {
			return j + 1, hi
		}
		hi = j + 1
	}
}

// bracketMin is the block length from which find starts from a guess: a
// shorter block takes four cache lines, and a binary search of them is as
// quick.
const bracketMin = 16

func (l *serviceList) get(name string) *ServiceView {
	if k, i, ok := l.find(name); ok {
		return l.block(k)[i].view
	}
	return nil
}

// all yields the services, in the list's order.
func (l *serviceList) all() iter.Seq[*ServiceView] {
	return func(yield func(*ServiceView) bool) {
		for k := range l.blockCount() {
			for _, e := range l.block(k) {
				if !yield(e.view) {
					return
				}
			}
		}
	}
}

// blockEdit is what an edit does to one block.
type blockEdit struct {
	reps  []replaced
	adds  []added
	drops int
}

type replaced struct {
	i  int
	sv *ServiceView
}

type added struct {
	h  uint64
	sv *ServiceView
}

// edit returns l with the services of names replaced by what build
// returns for each (given the old view, or nil; a nil result drops it). l
// is not changed, and the result shares the blocks that did not change.
// A block that gains or loses services merges the sorted additions into a
// new block, without sorting or hashing the services already there.
func (l *serviceList) edit(names map[string]struct{}, build func(name string, old *ServiceView) *ServiceView) serviceList {
	var edits map[int]*blockEdit // by block; a list without blocks gets block 0
	n := l.n
	for name := range names {
		k, i, found := l.find(name)
		var old *ServiceView
		if found {
			old = l.block(k)[i].view
		}
		sv := build(name, old)
		if !found && sv == nil {
			continue
		}
		if edits == nil {
			edits = make(map[int]*blockEdit)
		}
		e := edits[k]
		if e == nil {
			e = &blockEdit{}
			edits[k] = e
		}
		switch {
		case found:
			e.reps = append(e.reps, replaced{i, sv})
			if sv == nil {
				e.drops++
				n--
			}
		default:
			e.adds = append(e.adds, added{nameHash(name), sv})
			n++
		}
	}
	if len(edits) == 0 {
		return *l
	}
	if n == 0 {
		return serviceList{}
	}
	if l.n == 0 {
		return cut(mergeBlock(nil, edits[0]), n)
	}
	out := serviceList{one: l.one, blocks: slices.Clone(l.blocks), shift: l.shift, n: n}
	for k, e := range edits {
		if out.blocks == nil {
			out.one = mergeBlock(l.one, e)
		} else {
			out.blocks[k] = mergeBlock(l.blocks[k], e)
		}
	}
	if count := out.blockCount(); n/count > blockMax || (count > 1 && n/count < blockMin) {
		flat := make(svcBlock, 0, n)
		for k := range count {
			flat = append(flat, out.block(k)...)
		}
		return cut(flat, n)
	}
	return out
}

// mergeBlock returns block b with edit e applied. b is not changed.
func mergeBlock(b svcBlock, e *blockEdit) svcBlock {
	if e.drops == 0 && len(e.adds) == 0 {
		out := slices.Clone(b)
		for _, r := range e.reps {
			out[r.i].view = r.sv
		}
		return out
	}
	n := len(b) - e.drops + len(e.adds)
	if n == 0 {
		return nil
	}
	reps, adds := e.reps, e.adds
	slices.SortFunc(reps, func(x, y replaced) int { return cmp.Compare(x.i, y.i) })
	slices.SortFunc(adds, func(x, y added) int { return compareKeys(x.h, x.sv.Name, y.h, y.sv.Name) })
	out := make(svcBlock, 0, n)
	ai := 0
	for i, e := range b {
		if len(reps) > 0 && reps[0].i == i {
			e.view, reps = reps[0].sv, reps[1:]
			if e.view == nil {
				continue
			}
		}
		for ; ai < len(adds) && compareKeys(adds[ai].h, adds[ai].sv.Name, e.hash, e.view.Name) < 0; ai++ {
			out = append(out, svcEntry{adds[ai].h, adds[ai].sv})
		}
		out = append(out, e)
	}
	for _, a := range adds[ai:] {
		out = append(out, svcEntry{a.h, a.sv})
	}
	return out
}

// cut returns the n services of flat, which is sorted, as a list of blocks
// of blockTarget or fewer on average. Each block has an array of its own,
// so that a later edit of one frees the old one.
func cut(flat svcBlock, n int) serviceList {
	blocks := 1
	for blocks*blockTarget < n {
		blocks *= 2
	}
	if blocks == 1 {
		return serviceList{one: flat, shift: 64, n: n}
	}
	l := serviceList{blocks: make([]svcBlock, blocks), shift: uint8(64 - bits.TrailingZeros(uint(blocks))), n: n}
	start := 0
	for k := range l.blocks {
		end := start
		for end < n && int(flat[end].hash>>l.shift) == k {
			end++
		}
		if end > start {
			l.blocks[k] = slices.Clone(flat[start:end])
		}
		start = end
	}
	return l
}

// compareKeys orders services as a list keeps them: by the hash of their
// name, then by name.
func compareKeys(h1 uint64, name1 string, h2 uint64, name2 string) int {
	if c := cmp.Compare(h1, h2); c != 0 {
		return c
	}
	return strings.Compare(name1, name2)
}

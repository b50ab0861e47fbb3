package tporigin

import "encoding/binary"

// uuidTable is an open-addressing hash table from UUID keys to entries,
// with linear probing and backward-shift deletion (no tombstones). A slot is
// 24 bytes, key and entry inline; kind 0 marks an empty slot. It beats a Go
// map here because the key needs no hashing beyond one multiply (UUIDs are
// random or, for version 1, fast-changing in their low bytes) and a probe
// touches one cache line.
//
// It is not safe for concurrent use; the Tracker's lock guards it.
type uuidTable struct {
	slots []uuidSlot
	n     int
	shift uint // 64 - log2(len(slots))
}

type uuidSlot struct {
	key uuidKey
	e   entry
}

const minTableSize = 8

func (t *uuidTable) home(k *uuidKey) int {
	lo := binary.LittleEndian.Uint64(k[0:8])
	hi := binary.LittleEndian.Uint64(k[8:16])
	return int(((lo ^ hi) * 0x9e3779b97f4a7c15) >> t.shift)
}

func (t *uuidTable) len() int { return t.n }

func (t *uuidTable) get(k uuidKey) (entry, bool) {
	if t.n == 0 {
		return entry{}, false
	}
	mask := len(t.slots) - 1
	for i := t.home(&k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e.kind == 0 {
			return entry{}, false
		}
		if s.key == k {
			return s.e, true
		}
	}
}

// reserve sizes the table for n entries at most 3/4 full.
func (t *uuidTable) reserve(n int) {
	size := minTableSize
	for size*3 < n*4 {
		size *= 2
	}
	if size <= len(t.slots) {
		return
	}
	old := t.slots
	t.slots = make([]uuidSlot, size)
	t.shift = uint(64 - log2(size))
	t.n = 0
	for i := range old {
		if old[i].e.kind != 0 {
			t.set(old[i].key, old[i].e)
		}
	}
}

func log2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

// set inserts or replaces; e.kind must not be 0.
func (t *uuidTable) set(k uuidKey, e entry) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.reserve(max(minTableSize, len(t.slots)) * 3 / 4 * 2)
	}
	mask := len(t.slots) - 1
	for i := t.home(&k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e.kind == 0 {
			s.key, s.e = k, e
			t.n++
			return
		}
		if s.key == k {
			s.e = e
			return
		}
	}
}

func (t *uuidTable) del(k uuidKey) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(&k)
	for ; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e.kind == 0 {
			return
		}
		if s.key == k {
			break
		}
	}
	// Backward shift: move later members of the probe run into the hole
	// when their home does not lie cyclically in (hole, j].
	for j := i; ; {
		j = (j + 1) & mask
		s := &t.slots[j]
		if s.e.kind == 0 {
			break
		}
		h := t.home(&s.key)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.slots[i] = *s
			i = j
		}
	}
	t.slots[i] = uuidSlot{}
	t.n--
}

func (t *uuidTable) each(fn func(k uuidKey, e entry)) {
	for i := range t.slots {
		if t.slots[i].e.kind != 0 {
			fn(t.slots[i].key, t.slots[i].e)
		}
	}
}

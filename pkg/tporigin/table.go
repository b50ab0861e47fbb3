/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package tporigin

import (
	"runtime"
	"sync/atomic"
)

// uuidTable is an open-addressing hash table from UUID keys to entries,
// with linear probing and backward-shift deletion (no tombstones). A slot is
// three words, key and entry inline; an entry of 0 (kind 0) marks an empty
// slot. It beats a Go map here because the key needs no hashing beyond one
// multiply (UUIDs are random or, for version 1, fast-changing in their low
// bytes) and a probe touches one cache line.
//
// Readers take no lock: writers (serialised by the caller) make seq odd
// while they change the table and even again after, and a reader that saw
// seq change retries (a seqlock). Every slot word is read and written
// atomically, so readers never see a torn word, and a plain load is all an
// atomic load costs on amd64 and arm64. Readers therefore neither wait for
// one another nor share a cache line they write, as they would with an
// RWMutex.
type uuidTable struct {
	seq atomicUint64 // first: 64-bit aligned on 32-bit platforms too
	cur slotArrayPointer
	n   int // entries; writers only
}

// atomicUint64 is a uint64 read and written only with sync/atomic: what
// Go 1.19's atomic.Uint64 is, for Go 1.13 (the core's Go; docs/vendoring.md).
// Unlike atomic.Uint64 it does not align itself: on 32-bit platforms the
// 64-bit atomic functions need an 8-byte aligned word, so an atomicUint64
// must come first in a struct that is allocated on its own (uuidTable) or
// sit in an array of 8-byte multiples (slot, three of them).
type atomicUint64 struct{ v uint64 }

func (a *atomicUint64) Load() uint64   { return atomic.LoadUint64(&a.v) }
func (a *atomicUint64) Store(v uint64) { atomic.StoreUint64(&a.v, v) }
func (a *atomicUint64) Add(d uint64) uint64 {
	return atomic.AddUint64(&a.v, d)
}

// slotArrayPointer is an atomic *slotArray (atomic.Value: Go 1.13 has no
// atomic.Pointer, and no generics).
type slotArrayPointer struct{ v atomic.Value }

func (p *slotArrayPointer) Load() *slotArray {
	a, _ := p.v.Load().(*slotArray)
	return a
}

func (p *slotArrayPointer) Store(a *slotArray) { p.v.Store(a) }

type slotArray struct {
	slots []slot
	shift uint // 64 - log2(len(slots))
}

// slot is three 64-bit words; a slotArray's slots are one allocation,
// whose start is 64-bit aligned, so every word is.
type slot struct {
	lo, hi, e atomicUint64
}

const minTableSize = 8

func keyWords(k *uuidKey) (lo, hi uint64) { return k.lo, k.hi }

func (a *slotArray) home(lo, hi uint64) int {
	return int(((lo ^ hi) * 0x9e3779b97f4a7c15) >> a.shift)
}

func packEntry(e entry) uint64 { return uint64(e.tp) | uint64(e.kind)<<16 | uint64(e.tenant)<<32 }

func unpackEntry(w uint64) entry {
	return entry{tp: uint16(w), kind: Kind(w >> 16), tenant: uint32(w >> 32)}
}

func (t *uuidTable) len() int { return t.n }

// get may run concurrently with one writer.
func (t *uuidTable) get(k uuidKey) (entry, bool) {
	lo, hi := keyWords(&k)
	for spins := 0; ; spins++ {
		s1 := t.seq.Load()
		if s1&1 == 0 {
			w, ok := t.probe(lo, hi)
			if t.seq.Load() == s1 {
				return unpackEntry(w), ok
			}
		}
		if spins > 16 {
			runtime.Gosched() // a writer is mid-change
		}
	}
}

func (t *uuidTable) probe(lo, hi uint64) (uint64, bool) {
	a := t.cur.Load()
	if a == nil {
		return 0, false
	}
	mask := len(a.slots) - 1
	i := a.home(lo, hi)
	// At most len(slots) steps: a reader racing a writer may see a run
	// without its empty end; the seq check then discards the answer.
	for range a.slots {
		s := &a.slots[i]
		w := s.e.Load()
		if w == 0 {
			return 0, false
		}
		if s.lo.Load() == lo && s.hi.Load() == hi {
			return w, true
		}
		i = (i + 1) & mask
	}
	return 0, false
}

// reserve sizes the table for n entries at most 3/4 full. Writers only.
func (t *uuidTable) reserve(n int) {
	size := minTableSize
	for size*3 < n*4 {
		size *= 2
	}
	old := t.cur.Load()
	if old != nil && size <= len(old.slots) {
		return
	}
	a := &slotArray{slots: make([]slot, size), shift: uint(64 - log2(size))}
	if old != nil {
		for i := range old.slots {
			s := &old.slots[i]
			if w := s.e.Load(); w != 0 {
				a.insert(s.lo.Load(), s.hi.Load(), w)
			}
		}
	}
	t.seq.Add(1)
	t.cur.Store(a)
	t.seq.Add(1)
}

func log2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

// insert places a key known to be absent, into a table with room.
func (a *slotArray) insert(lo, hi, w uint64) {
	mask := len(a.slots) - 1
	for i := a.home(lo, hi); ; i = (i + 1) & mask {
		s := &a.slots[i]
		if s.e.Load() == 0 {
			s.lo.Store(lo)
			s.hi.Store(hi)
			s.e.Store(w)
			return
		}
	}
}

// set inserts or replaces; e.kind must not be 0. Writers only.
func (t *uuidTable) set(k uuidKey, e entry) {
	if a := t.cur.Load(); a == nil || (t.n+1)*4 > len(a.slots)*3 {
		size := minTableSize
		if a != nil {
			size = len(a.slots)
		}
		t.reserve(size * 3 / 4 * 2)
	}
	lo, hi := keyWords(&k)
	w := packEntry(e)
	a := t.cur.Load()
	mask := len(a.slots) - 1
	for i := a.home(lo, hi); ; i = (i + 1) & mask {
		s := &a.slots[i]
		cur := s.e.Load()
		if cur == 0 {
			t.seq.Add(1)
			s.lo.Store(lo)
			s.hi.Store(hi)
			s.e.Store(w)
			t.seq.Add(1)
			t.n++
			return
		}
		if s.lo.Load() == lo && s.hi.Load() == hi {
			t.seq.Add(1)
			s.e.Store(w)
			t.seq.Add(1)
			return
		}
	}
}

// del removes k if present. Writers only.
func (t *uuidTable) del(k uuidKey) {
	a := t.cur.Load()
	if t.n == 0 || a == nil {
		return
	}
	lo, hi := keyWords(&k)
	mask := len(a.slots) - 1
	i := a.home(lo, hi)
	for ; ; i = (i + 1) & mask {
		s := &a.slots[i]
		if s.e.Load() == 0 {
			return
		}
		if s.lo.Load() == lo && s.hi.Load() == hi {
			break
		}
	}
	t.seq.Add(1) // readers retry until the run is whole again
	{
		// Backward shift: move later members of the probe run into the
		// hole when their home does not lie cyclically in (hole, j].
		for j := i; ; {
			j = (j + 1) & mask
			s := &a.slots[j]
			w := s.e.Load()
			if w == 0 {
				break
			}
			h := a.home(s.lo.Load(), s.hi.Load())
			if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
				d := &a.slots[i]
				d.lo.Store(s.lo.Load())
				d.hi.Store(s.hi.Load())
				d.e.Store(w)
				i = j
			}
		}
		d := &a.slots[i]
		d.e.Store(0)
		d.lo.Store(0)
		d.hi.Store(0)
	}
	t.seq.Add(1)
	t.n--
}

// each calls fn for every entry. Writers only (or with writers excluded).
func (t *uuidTable) each(fn func(k uuidKey, e entry)) {
	a := t.cur.Load()
	if a == nil {
		return
	}
	for i := range a.slots {
		s := &a.slots[i]
		if w := s.e.Load(); w != 0 {
			fn(uuidKey{lo: s.lo.Load(), hi: s.hi.Load()}, unpackEntry(w))
		}
	}
}

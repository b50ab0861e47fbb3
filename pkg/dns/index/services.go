package index

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"
)

// serviceList is a namespace's services, sorted by the hash of their name
// (then by name): a lookup searches the hashes, 8 bytes a service in one
// array, and reads one view to confirm. A Go map took about 40 bytes a
// service; a list sorted by name, 8, but its search followed a pointer to
// a name at every step, which cost a busy server a tenth of its CPU.
type serviceList struct {
	hashes []uint64
	views  []*ServiceView
}

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

// find returns the index of service name, or where it would go.
func (l *serviceList) find(name string) (int, bool) {
	h := nameHash(name)
	lo, hi := l.bracket(h)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.hashes[m] < h {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for i := lo; i < len(l.hashes) && l.hashes[i] == h; i++ {
		if l.views[i].Name == name {
			return i, true
		}
	}
	return lo, false
}

// bracket returns a range [lo, hi) that holds the first index whose hash
// is h or more (or hi = len, when there is none). The hashes are spread
// evenly over 64 bits, so that index is close to len·h/2⁶⁴: a search that
// starts there and widens by doubling steps reads a cache line or two of a
// large namespace's hashes, where a binary search of the whole list read
// one line per step, most of them from memory at 600k objects.
func (l *serviceList) bracket(h uint64) (lo, hi int) {
	n := len(l.hashes)
	if n < bracketMin {
		return 0, n
	}
	g, _ := bits.Mul64(h, uint64(n))
	i := int(g) // in [0, n)
	if l.hashes[i] < h {
		lo = i + 1
		for step := 1; ; step *= 2 {
			j := i + step
			if j >= n {
				return lo, n
			}
			if l.hashes[j] >= h {
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
		if l.hashes[j] < h {
			return j + 1, hi
		}
		hi = j + 1
	}
}

// bracketMin is the list length from which find starts from a guess: a
// shorter list's hashes take a few cache lines, and a binary search of them
// is as quick.
const bracketMin = 64

func (l *serviceList) get(name string) *ServiceView {
	if i, ok := l.find(name); ok {
		return l.views[i]
	}
	return nil
}

// edit returns l with the services of names replaced by what build
// returns for each (given the old view, or nil; a nil result drops it). l
// is not changed, and the result shares what did not change: a publish
// that only replaces views copies the view pointers (8 bytes a service) and
// shares the hashes; one that adds or drops services merges the sorted
// additions into a new list (16 bytes a service), without sorting or
// hashing the services already there.
func (l *serviceList) edit(names map[string]struct{}, build func(name string, old *ServiceView) *ServiceView) serviceList {
	type replaced struct {
		i  int
		sv *ServiceView
	}
	type added struct {
		h  uint64
		sv *ServiceView
	}
	var reps []replaced
	var adds []added
	drops := 0
	for name := range names {
		i, found := l.find(name)
		var old *ServiceView
		if found {
			old = l.views[i]
		}
		sv := build(name, old)
		switch {
		case found:
			reps = append(reps, replaced{i, sv})
			if sv == nil {
				drops++
			}
		case sv != nil:
			adds = append(adds, added{nameHash(name), sv})
		}
	}
	if drops == 0 && len(adds) == 0 {
		if len(reps) == 0 {
			return *l
		}
		views := slices.Clone(l.views)
		for _, r := range reps {
			views[r.i] = r.sv
		}
		return serviceList{hashes: l.hashes, views: views}
	}
	n := len(l.views) - drops + len(adds)
	if n == 0 {
		return serviceList{}
	}
	slices.SortFunc(reps, func(x, y replaced) int { return cmp.Compare(x.i, y.i) })
	slices.SortFunc(adds, func(x, y added) int { return compareKeys(x.h, x.sv.Name, y.h, y.sv.Name) })
	out := serviceList{hashes: make([]uint64, 0, n), views: make([]*ServiceView, 0, n)}
	ai := 0
	for i, h := range l.hashes {
		sv := l.views[i]
		if len(reps) > 0 && reps[0].i == i {
			sv, reps = reps[0].sv, reps[1:]
			if sv == nil {
				continue
			}
		}
		for ; ai < len(adds) && compareKeys(adds[ai].h, adds[ai].sv.Name, h, sv.Name) < 0; ai++ {
			out.hashes, out.views = append(out.hashes, adds[ai].h), append(out.views, adds[ai].sv)
		}
		out.hashes, out.views = append(out.hashes, h), append(out.views, sv)
	}
	for _, a := range adds[ai:] {
		out.hashes, out.views = append(out.hashes, a.h), append(out.views, a.sv)
	}
	return out
}

// compareKeys orders services as a list keeps them: by the hash of their
// name, then by name.
func compareKeys(h1 uint64, name1 string, h2 uint64, name2 string) int {
	if c := cmp.Compare(h1, h2); c != 0 {
		return c
	}
	return strings.Compare(name1, name2)
}

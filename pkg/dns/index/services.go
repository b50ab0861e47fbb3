package index

import (
	"cmp"
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
	lo, hi := 0, len(l.hashes)
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

func (l *serviceList) get(name string) *ServiceView {
	if i, ok := l.find(name); ok {
		return l.views[i]
	}
	return nil
}

// edit returns a copy of l with the services of names replaced by what
// build returns for each (given the old view, or nil; a nil result drops
// it). l is not changed.
func (l *serviceList) edit(names map[string]struct{}, build func(name string, old *ServiceView) *ServiceView) serviceList {
	views := make([]*ServiceView, len(l.views), len(l.views)+len(names))
	copy(views, l.views)
	reordered := false
	for name := range names {
		i, found := l.find(name)
		var old *ServiceView
		if found {
			old = l.views[i]
		}
		sv := build(name, old)
		switch {
		case found:
			views[i] = sv // nil, when dropped, until compacted below
			reordered = reordered || sv == nil
		case sv != nil:
			views = append(views, sv)
			reordered = true
		}
	}
	if !reordered {
		return serviceList{hashes: l.hashes, views: views} // same names, same order
	}
	views = slices.DeleteFunc(views, func(sv *ServiceView) bool { return sv == nil })
	if len(views) == 0 {
		return serviceList{}
	}
	type keyed struct {
		h  uint64
		sv *ServiceView
	}
	ks := make([]keyed, len(views))
	for i, sv := range views {
		ks[i] = keyed{nameHash(sv.Name), sv}
	}
	slices.SortFunc(ks, func(x, y keyed) int {
		if c := cmp.Compare(x.h, y.h); c != 0 {
			return c
		}
		return strings.Compare(x.sv.Name, y.sv.Name)
	})
	out := serviceList{hashes: make([]uint64, len(ks)), views: slices.Clip(views)}
	for i, k := range ks {
		out.hashes[i], out.views[i] = k.h, k.sv
	}
	return out
}

package index

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// TestServiceListMatchesAMap applies random batches of sets and drops to a
// serviceList and to a plain map, and checks that every version answers
// like the map did at that point, stays sorted, and never changes later.
func TestServiceListMatchesAMap(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	type version struct {
		l    serviceList
		want map[string]*ServiceView
	}
	var cur serviceList
	want := map[string]*ServiceView{}
	var versions []version
	for batch := 0; batch < 300; batch++ {
		names := map[string]struct{}{}
		for op := r.Intn(20); op >= 0; op-- {
			names[fmt.Sprintf("svc%d", r.Intn(150))] = struct{}{}
		}
		next := make(map[string]*ServiceView, len(want))
		for k, v := range want {
			next[k] = v
		}
		cur = cur.edit(names, func(name string, old *ServiceView) *ServiceView {
			if old != want[name] {
				t.Fatalf("batch %d: edit of %s was given %p, want %p", batch, name, old, want[name])
			}
			if r.Intn(3) == 0 {
				delete(next, name)
				return nil
			}
			sv := &ServiceView{ServiceSpec: ServiceSpec{Name: name}}
			next[name] = sv
			return sv
		})
		want = next
		versions = append(versions, version{cur, want})
	}
	for n, v := range versions {
		if len(v.l.views) != len(v.want) || len(v.l.hashes) != len(v.l.views) {
			t.Fatalf("version %d: %d views, %d hashes, want %d", n, len(v.l.views), len(v.l.hashes), len(v.want))
		}
		if !slices.IsSorted(v.l.hashes) {
			t.Fatalf("version %d: hashes not sorted", n)
		}
		for i, sv := range v.l.views {
			if v.l.hashes[i] != nameHash(sv.Name) {
				t.Fatalf("version %d: hash %d is not %s's", n, i, sv.Name)
			}
		}
		for name, sv := range v.want {
			if got := v.l.get(name); got != sv {
				t.Fatalf("version %d: get(%s) = %p, want %p", n, name, got, sv)
			}
		}
		if v.l.get("svc-absent") != nil || v.l.get("") != nil {
			t.Fatalf("version %d: an absent name was found", n)
		}
	}
}

func BenchmarkServiceListGet(b *testing.B) {
	var l serviceList
	names := map[string]struct{}{}
	var list []string
	for i := 0; i < 600; i++ {
		n := fmt.Sprintf("svc%d", i*40)
		names[n] = struct{}{}
		list = append(list, n)
	}
	l = l.edit(names, func(name string, _ *ServiceView) *ServiceView {
		return &ServiceView{ServiceSpec: ServiceSpec{Name: name}}
	})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if l.get(list[i%len(list)]) == nil {
			b.Fatal("missing")
		}
	}
}

// TestFindStartsFromItsGuess: in lists long enough for find to start from
// an interpolated guess, every name is found where it is, and every absent
// name's place is the first hash at or above its own (a linear search's
// answer).
func TestFindStartsFromItsGuess(t *testing.T) {
	for _, n := range []int{bracketMin - 1, bracketMin, 1000, 5000} {
		names := map[string]struct{}{}
		for i := range n {
			names[fmt.Sprintf("svc-%d", i)] = struct{}{}
		}
		var l serviceList
		l = l.edit(names, func(name string, _ *ServiceView) *ServiceView {
			return &ServiceView{ServiceSpec: ServiceSpec{Name: name}}
		})
		for i := range n {
			name := fmt.Sprintf("svc-%d", i)
			if j, ok := l.find(name); !ok || l.views[j].Name != name {
				t.Fatalf("n=%d: find(%s) = %d, %v", n, name, j, ok)
			}
		}
		for i := range 2000 {
			name := fmt.Sprintf("absent-%d", i)
			h := nameHash(name)
			want := 0
			for want < len(l.hashes) && l.hashes[want] < h {
				want++
			}
			if j, ok := l.find(name); ok || j != want {
				t.Fatalf("n=%d: find(%s) = %d, %v, want %d, false", n, name, j, ok, want)
			}
		}
	}
}

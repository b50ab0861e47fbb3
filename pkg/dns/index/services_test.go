package index

import (
	"fmt"
	"math/rand"
	"testing"
	"unsafe"
)

// TestServiceListMatchesAMap applies random batches of sets and drops to a
// serviceList and to a plain map, first growing it and then shrinking it,
// and checks that every version answers like the map did at that point,
// keeps its blocks' invariants, and never changes later.
func TestServiceListMatchesAMap(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	type version struct {
		l    serviceList
		want map[string]*ServiceView
	}
	var cur serviceList
	want := map[string]*ServiceView{}
	var versions []version
	grew, shrank := false, false // the list was cut again as it grew, and as it shrank
	for batch := 0; batch < 600; batch++ {
		dropOneIn := 8 // grow to a few thousand services
		if batch >= 300 {
			dropOneIn = 1 // then shrink, mostly dropping
		}
		names := map[string]struct{}{}
		for op := r.Intn(60); op >= 0; op-- {
			names[fmt.Sprintf("svc%d", r.Intn(4000))] = struct{}{}
		}
		if batch >= 300 {
			for name := range want { // drops must find what is there
				if len(names) > 80 {
					break
				}
				names[name] = struct{}{}
			}
		}
		next := make(map[string]*ServiceView, len(want))
		for k, v := range want {
			next[k] = v
		}
		cur = cur.edit(names, func(name string, old *ServiceView) *ServiceView {
			if old != want[name] {
				t.Fatalf("batch %d: edit of %s was given %p, want %p", batch, name, old, want[name])
			}
			if r.Intn(dropOneIn) == 0 && (batch >= 300 || r.Intn(2) == 0) {
				delete(next, name)
				return nil
			}
			sv := &ServiceView{ServiceSpec: ServiceSpec{Name: name}}
			next[name] = sv
			return sv
		})
		want = next
		versions = append(versions, version{cur, want})
		if len(versions) > 1 {
			before, after := versions[len(versions)-2].l.blockCount(), cur.blockCount()
			grew = grew || (before > 0 && after > before)
			shrank = shrank || (after > 0 && after < before)
		}
	}
	if len(want) != 0 && len(want) > 200 {
		t.Fatalf("the list did not shrink: %d services left", len(want))
	}
	if !grew || !shrank {
		t.Fatalf("the list was cut again as it grew: %v, as it shrank: %v; want both", grew, shrank)
	}
	for n, v := range versions {
		checkBlocks(t, n, &v.l)
		if v.l.n != len(v.want) {
			t.Fatalf("version %d: n = %d, want %d", n, v.l.n, len(v.want))
		}
		for name, sv := range v.want {
			if got := v.l.get(name); got != sv {
				t.Fatalf("version %d: get(%s) = %p, want %p", n, name, got, sv)
			}
		}
		if v.l.get("svc-absent") != nil || v.l.get("") != nil {
			t.Fatalf("version %d: an absent name was found", n)
		}
		seen := 0
		for sv := range v.l.all() {
			if v.want[sv.Name] != sv {
				t.Fatalf("version %d: all yields %s, which is not in the map", n, sv.Name)
			}
			seen++
		}
		if seen != len(v.want) {
			t.Fatalf("version %d: all yields %d services, want %d", n, seen, len(v.want))
		}
	}
}

// checkBlocks checks a list's invariants: a power of two of blocks that
// its shift addresses, each block sorted by hash and holding only the
// hashes that pick it, and an average block size in bounds.
func checkBlocks(t *testing.T, version int, l *serviceList) {
	t.Helper()
	if l.n == 0 {
		if l.blocks != nil || l.one != nil {
			t.Fatalf("version %d: empty list with blocks", version)
		}
		return
	}
	// One block is kept in place, more in the array.
	if (l.blocks == nil) == (l.one == nil) || len(l.blocks) == 1 {
		t.Fatalf("version %d: one block %v, %d in the array", version, l.one != nil, len(l.blocks))
	}
	count := l.blockCount()
	if bits := 64 - int(l.shift); count != 1<<bits {
		t.Fatalf("version %d: %d blocks for shift %d", version, count, l.shift)
	}
	if avg := l.n / count; avg > blockMax || (count > 1 && avg < blockMin) {
		t.Fatalf("version %d: %d services in %d blocks", version, l.n, count)
	}
	total := 0
	for k := range count {
		b := l.block(k)
		for i, e := range b {
			sv := e.view
			if e.hash != nameHash(sv.Name) {
				t.Fatalf("version %d: block %d hash %d is not %s's", version, k, i, sv.Name)
			}
			if int(e.hash>>l.shift) != k {
				t.Fatalf("version %d: %s is in block %d, its hash picks %d", version, sv.Name, k, e.hash>>l.shift)
			}
			if i > 0 && compareKeys(b[i-1].hash, b[i-1].view.Name, e.hash, sv.Name) >= 0 {
				t.Fatalf("version %d: block %d is not sorted at %d", version, k, i)
			}
		}
		total += len(b)
	}
	if total != l.n {
		t.Fatalf("version %d: blocks hold %d services, n is %d", version, total, l.n)
	}
}

// TestServiceListEditCopiesOneBlock: adding a service to a large list or
// replacing one's view makes one new block and shares every other block's
// arrays with the old list.
func TestServiceListEditCopiesOneBlock(t *testing.T) {
	names := map[string]struct{}{}
	for i := range 1000 {
		names[fmt.Sprintf("svc-%d", i)] = struct{}{}
	}
	var l serviceList
	l = l.edit(names, func(name string, _ *ServiceView) *ServiceView {
		return &ServiceView{ServiceSpec: ServiceSpec{Name: name}}
	})
	for _, tc := range []struct{ name, change string }{{"svc-new", "an added service"}, {"svc-7", "a replaced view"}} {
		next := l.edit(map[string]struct{}{tc.name: {}}, func(name string, _ *ServiceView) *ServiceView {
			return &ServiceView{ServiceSpec: ServiceSpec{Name: name}}
		})
		if len(next.blocks) != len(l.blocks) {
			t.Fatalf("%s: %d blocks became %d", tc.change, len(l.blocks), len(next.blocks))
		}
		k, _, _ := next.find(tc.name)
		for j := range l.blocks {
			shared := unsafe.SliceData(l.blocks[j]) == unsafe.SliceData(next.blocks[j])
			if shared != (j != k) {
				t.Fatalf("%s: block %d is shared: %v (the change is in block %d)", tc.change, j, shared, k)
			}
		}
		if next.get(tc.name) == l.get(tc.name) {
			t.Fatalf("%s: %s's view did not change", tc.change, tc.name)
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
			if k, j, ok := l.find(name); !ok || l.block(k)[j].view.Name != name {
				t.Fatalf("n=%d: find(%s) = %d, %d, %v", n, name, k, j, ok)
			}
		}
		for i := range 2000 {
			name := fmt.Sprintf("absent-%d", i)
			h := nameHash(name)
			k := int(h >> l.shift)
			want := 0
			for want < len(l.block(k)) && l.block(k)[want].hash < h {
				want++
			}
			if gk, j, ok := l.find(name); ok || gk != k || j != want {
				t.Fatalf("n=%d: find(%s) = %d, %d, %v, want %d, %d, false", n, name, gk, j, ok, k, want)
			}
		}
	}
}

// BenchmarkServiceListGetCold looks names up at random in lists of 600k
// services in all, far more than the caches hold, as in partition-dns at
// 600k objects, where a lookup's cost is its cache misses: 400 large
// namespaces (make bench-scale's shape), or 20,000 small ones.
func BenchmarkServiceListGetCold(b *testing.B) {
	for _, shape := range []struct{ lists, perList int }{{400, 1500}, {20000, 30}} {
		b.Run(fmt.Sprintf("%dx%d", shape.lists, shape.perList), func(b *testing.B) {
			benchmarkColdLookups(b, shape.lists, shape.perList)
		})
	}
}

func benchmarkColdLookups(b *testing.B, lists, perList int) {
	ls := make([]serviceList, lists)
	for i := range ls {
		names := map[string]struct{}{}
		for j := range perList {
			names[fmt.Sprintf("svc%d", j)] = struct{}{}
		}
		ls[i] = ls[i].edit(names, func(name string, _ *ServiceView) *ServiceView {
			return &ServiceView{ServiceSpec: ServiceSpec{Name: name}}
		})
	}
	// A namespace view holds its list: look lists up through pointers, as
	// a query reaches its namespace's.
	views := make([]*NamespaceView, lists)
	for i := range views {
		views[i] = &NamespaceView{services: ls[i]}
	}
	r := rand.New(rand.NewSource(1))
	type query struct {
		ns   *NamespaceView
		name string
	}
	qs := make([]query, 1<<16)
	for i := range qs {
		qs[i] = query{views[r.Intn(lists)], fmt.Sprintf("svc%d", r.Intn(perList))}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q := &qs[i&(len(qs)-1)]
		if q.ns.Service(q.name) == nil {
			b.Fatal("missing")
		}
	}
}

package index

import (
	"math/rand"
	"net/netip"
	"slices"
	"testing"
)

// TestAddrMapMatchesAMap applies random batches of sets and deletes to an
// addrMap and to a plain map, and checks that every published map answers
// like the plain map did at that point, and that earlier maps never change.
func TestAddrMapMatchesAMap(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	addr := func() netip.Addr {
		if r.Intn(8) == 0 {
			return netip.AddrFrom16([16]byte{0xfd, 15: byte(r.Intn(64))})
		}
		return netip.AddrFrom4([4]byte{10, 0, byte(r.Intn(4)), byte(r.Intn(256))})
	}
	type version struct {
		m    addrMap[int]
		want map[netip.Addr][]int
	}
	var cur addrMap[int]
	want := map[netip.Addr][]int{}
	var versions []version
	for batch := 0; batch < 200; batch++ {
		e := addrEdits[int]{old: &cur}
		next := make(map[netip.Addr][]int, len(want))
		for k, v := range want {
			next[k] = v
		}
		for op := r.Intn(50); op >= 0; op-- {
			a := addr()
			if r.Intn(3) == 0 {
				e.set(a, nil)
				delete(next, a)
				continue
			}
			v := append(slices.Clone(e.get(a)), batch*100+op)
			e.set(a, v)
			next[a] = v
		}
		cur, want = e.apply(), next
		versions = append(versions, version{cur, want})
	}
	for n, v := range versions {
		if got := v.m.len(); got != len(v.want) {
			t.Fatalf("version %d: %d addresses, want %d", n, got, len(v.want))
		}
		for a, w := range v.want {
			if got := v.m.get(a); !slices.Equal(got, w) {
				t.Fatalf("version %d: %v = %v, want %v", n, a, got, w)
			}
		}
		for i := range shards {
			if s := v.m.shard(i); s != nil && !slices.IsSortedFunc(s.addrs, addrKey.compare) {
				t.Fatalf("version %d: shard %d not sorted", n, i)
			}
		}
		if v.m.get(netip.MustParseAddr("192.0.2.1")) != nil {
			t.Fatal("an absent address has values")
		}
		for a := range v.want {
			if a.Is4() && v.m.get(netip.AddrFrom16(a.As16())) != nil {
				t.Fatalf("version %d: the IPv4-mapped form of %v has its values", n, a)
			}
		}
	}
}

// TestAddrStepsAreWholeGroups: applyTo changes a group in place once it
// has copied it, so each of storeAddrs's steps must cover whole groups, or
// a step's published snapshot would see the next step's shards change.
func TestAddrStepsAreWholeGroups(t *testing.T) {
	if shards%addrSteps != 0 || shards/addrSteps%fanout != 0 {
		t.Fatalf("%d shards in %d steps do not split into whole groups of %d", shards, addrSteps, fanout)
	}
}

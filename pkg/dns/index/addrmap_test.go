package index

import (
	"fmt"
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
	t.Run("spread", func(t *testing.T) {
		testAddrMap(t, r, 50, func() netip.Addr {
			if r.Intn(8) == 0 {
				return netip.AddrFrom16([16]byte{0xfd, 15: byte(r.Intn(64))})
			}
			return netip.AddrFrom4([4]byte{10, 0, byte(r.Intn(4)), byte(r.Intn(256))})
		})
	})
	// IPv6 addresses that differ only in bytes 0-10 share a shard
	// (shardOf), so that shards grow to many blocks and batches split,
	// join and empty them.
	t.Run("dense", func(t *testing.T) {
		if most := testAddrMap(t, r, 400, func() netip.Addr {
			return netip.AddrFrom16([16]byte{0xfd, 9: byte(r.Intn(2)), 10: byte(r.Intn(250)), 15: byte(r.Intn(2))})
		}); most < 4 {
			t.Fatalf("at most %d blocks in a shard: the blocks were not tested", most)
		}
	})
	// Large batches against a few shards, as a list's publishes make them.
	t.Run("lists", func(t *testing.T) {
		if most := testAddrMap(t, r, 1000, func() netip.Addr {
			return netip.AddrFrom16([16]byte{0xfd, 8: byte(r.Intn(4)), 10: byte(r.Intn(256)), 15: byte(r.Intn(3))})
		}); most < 4 {
			t.Fatalf("at most %d blocks in a shard: the blocks were not tested", most)
		}
	})
}

// testAddrMap checks an addrMap against a plain map over 200 batches of up
// to ops random sets and deletes of addresses from addr, and returns the
// most blocks a shard had.
func testAddrMap(t *testing.T, r *rand.Rand, ops int, addr func() netip.Addr) (most int) {
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
		for op := r.Intn(ops); op >= 0; op-- {
			a := addr()
			// Sets outnumber deletes in the first half, and deletes
			// sets in the second, so that blocks grow and split, then
			// shrink, join and empty.
			if (r.Intn(3) == 0) == (batch < 100) {
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
			s := v.m.shard(i)
			if err := checkShard(s); err != nil {
				t.Fatalf("version %d: shard %d: %v", n, i, err)
			}
			if s != nil {
				most = max(most, len(s.blocks))
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
	return most
}

// checkShard reports what is wrong with s's blocks: an empty one, addresses
// out of order, values not where their offsets say, or (with more than one
// block) a block of fewer than minBlock or more than maxBlock addresses.
func checkShard[V any](s *addrShard[V]) error {
	if s == nil {
		return nil
	}
	if len(s.blocks) == 0 {
		return fmt.Errorf("a shard with no blocks is not nil")
	}
	var prev *addrKey
	for j, b := range s.blocks {
		n := len(b.addrs)
		switch {
		case n == 0:
			return fmt.Errorf("block %d is empty", j)
		case len(s.blocks) > 1 && (n < minBlock || n > maxBlock):
			return fmt.Errorf("block %d of %d has %d addresses", j, len(s.blocks), n)
		case len(b.offs) != n+1 || b.offs[0] != 0 || int(b.offs[n]) != len(b.vals):
			return fmt.Errorf("block %d: offsets %v for %d addresses and %d values", j, b.offs, n, len(b.vals))
		}
		for i := range b.addrs {
			if prev != nil && prev.compare(b.addrs[i]) >= 0 {
				return fmt.Errorf("block %d: address %d is not after the one before", j, i)
			}
			if b.offs[i] >= b.offs[i+1] {
				return fmt.Errorf("block %d: address %d has no values", j, i)
			}
			prev = &b.addrs[i]
		}
	}
	return nil
}

// TestAddrStepsAreWholeGroups: applyTo changes a group in place once it
// has copied it, so each of storeAddrs's steps must cover whole groups, or
// a step's published snapshot would see the next step's shards change.
func TestAddrStepsAreWholeGroups(t *testing.T) {
	if shards%addrSteps != 0 || shards/addrSteps%fanout != 0 {
		t.Fatalf("%d shards in %d steps do not split into whole groups of %d", shards, addrSteps, fanout)
	}
}

// BenchmarkAddrMapChange is one publish of one new address into a reverse
// table of 1.31M addresses (320 a shard), the table of 1.5M objects over
// 10 TPs: what each change of steady churn copies.
func BenchmarkAddrMapChange(b *testing.B) {
	owner := []revOwner{{svc: nameHash("svc"), ep: clusterIP}}
	e := addrEdits[revOwner]{old: &addrMap[revOwner]{}}
	for i := range 1310000 {
		e.set(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), owner)
	}
	m := e.apply()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e := addrEdits[revOwner]{old: &m}
		e.set(netip.AddrFrom4([4]byte{11, byte(i >> 16), byte(i >> 8), byte(i)}), owner)
		m = e.apply()
	}
}

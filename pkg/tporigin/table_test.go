package tporigin

import (
	"math/rand/v2"
	"testing"
)

// TestUUIDTableMatchesMap drives the table and a Go map with the same
// random inserts, updates and deletes, on keys that collide in their home
// slots often (few distinct high bits), and checks they agree throughout.
func TestUUIDTableMatchesMap(t *testing.T) {
	for _, keySpace := range []int{50, 2000} {
		r := rand.New(rand.NewPCG(1, uint64(keySpace)))
		var tab uuidTable
		ref := map[uuidKey]entry{}
		key := func() uuidKey {
			var k uuidKey
			n := r.IntN(keySpace)
			k[0], k[1], k[15] = byte(n), byte(n>>8), byte(n*7)
			return k
		}
		for step := 0; step < 50_000; step++ {
			k := key()
			switch r.IntN(3) {
			case 0, 1:
				e := entry{tp: uint16(r.IntN(5)), kind: KindPod, tenant: uint32(step)}
				tab.set(k, e)
				ref[k] = e
			case 2:
				tab.del(k)
				delete(ref, k)
			}
			if tab.len() != len(ref) {
				t.Fatalf("step %d: len %d, want %d", step, tab.len(), len(ref))
			}
			if step%97 == 0 {
				for k, want := range ref {
					if got, ok := tab.get(k); !ok || got != want {
						t.Fatalf("step %d: get(%x) = %+v, %v; want %+v", step, k, got, ok, want)
					}
				}
				n := 0
				tab.each(func(k uuidKey, e entry) {
					n++
					if ref[k] != e {
						t.Fatalf("each gave %x=%+v, map has %+v", k, e, ref[k])
					}
				})
				if n != len(ref) {
					t.Fatalf("each visited %d, want %d", n, len(ref))
				}
			}
			if _, ok := tab.get(uuidKey{0xff, 0xff, 0xff}); ok {
				t.Fatal("found a key never inserted")
			}
		}
	}
}

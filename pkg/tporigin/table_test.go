package tporigin

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestUUIDTableMatchesMap drives the table and a Go map with the same
// random inserts, updates and deletes, on keys that collide in their home
// slots often (few distinct high bits), and checks they agree throughout.
func TestUUIDTableMatchesMap(t *testing.T) {
	for _, keySpace := range []int{50, 2000} {
		r := rand.New(rand.NewPCG(1, uint64(keySpace)))
		tab := &uuidTable{}
		ref := map[uuidKey]entry{}
		key := func() uuidKey {
			var k [16]byte
			n := r.IntN(keySpace)
			k[0], k[1], k[15] = byte(n), byte(n>>8), byte(n*7)
			return keyFromBytes(k)
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
			if _, ok := tab.get(uuidKey{lo: 0xffffff}); ok {
				t.Fatal("found a key never inserted")
			}
		}
	}
}

// TestOriginOfDuringWrites reads without locks while a writer inserts,
// deletes and grows the table: origins that stay must always be found with
// their TP, and churned ones, when found, must carry theirs.
func TestOriginOfDuringWrites(t *testing.T) {
	tr := mustOpen(t, Options{Partitions: []string{"tp0", "tp1", "tp2"}})
	tpOf := func(i int) string { return []string{"tp0", "tp1", "tp2"}[i%3] }
	const stable = 2000
	for i := 0; i < stable; i++ {
		observe(t, tr, uid(i), tpOf(i), "", KindPod)
	}
	stop := make(chan struct{})
	errs := make(chan string, 10)
	reader := func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				errs <- ""
				return
			default:
			}
			i := n % stable
			if tp, ok := tr.OriginOf(uid(i)); !ok || tp != tpOf(i) {
				errs <- fmt.Sprintf("stable %d: %q, %v", i, tp, ok)
				return
			}
			j := stable + n%5000
			if tp, ok := tr.OriginOf(uid(j)); ok && tp != tpOf(j) {
				errs <- fmt.Sprintf("churned %d: %q", j, tp)
				return
			}
		}
	}
	go reader()
	go reader()
	r := rand.New(rand.NewPCG(7, 7))
	for step := 0; step < 60_000; step++ {
		j := stable + r.IntN(5000)
		if r.IntN(2) == 0 {
			observe(t, tr, uid(j), tpOf(j), "", KindPod)
		} else if _, err := tr.Forget(uid(j), tpOf(j)); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	for i := 0; i < 2; i++ {
		if msg := <-errs; msg != "" {
			t.Fatal(msg)
		}
	}
}

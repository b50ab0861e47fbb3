package index

import (
	"runtime"
	"slices"
	"testing"
)

func TestPortTableSharesEqualLists(t *testing.T) {
	var pt portTable
	http := func() []Port { return []Port{{Name: "http", Protocol: "TCP", Port: 80}} }
	a, b := pt.intern(http()), pt.intern(http())
	if a != b || !slices.Equal(*a, http()) {
		t.Fatal("equal lists are not shared")
	}
	for _, other := range [][]Port{
		{{Name: "http", Protocol: "UDP", Port: 80}},
		{{Name: "http", Protocol: "TCP", Port: 81}},
		{{Name: "http", Protocol: "TCP", Port: 80}, {Name: "https", Protocol: "TCP", Port: 443}},
		{{Name: "h\x00ttp", Protocol: "TCP", Port: 80}},
		{{Name: "http\x04", Protocol: "TCP", Port: 80}},
		{{Name: "", Protocol: "", Port: NoPort}},
	} {
		if got := pt.intern(slices.Clone(other)); got == a || &(*got)[0] == &(*a)[0] || !slices.Equal(*got, other) {
			t.Fatalf("intern(%v) = %v", other, got)
		}
	}
	if got := pt.intern(nil); got != nil {
		t.Fatalf("intern(nil) = %v", got)
	}
	runtime.KeepAlive(a)

	// A service keeps only the elements (a []Port); a header for them is
	// made again when its last holder has gone, and the elements stay shared.
	elems := *pt.intern(http())
	runtime.GC()
	runtime.GC()
	if again := pt.intern(http()); &(*again)[0] != &elems[0] {
		t.Fatal("a list whose elements are still in use was not shared again")
	}
	runtime.KeepAlive(elems)
}

func TestPortTableForgetsUnusedLists(t *testing.T) {
	var pt portTable
	for i := 0; i < 1000; i++ {
		pt.intern([]Port{{Name: "p", Protocol: "TCP", Port: int32(i)}})
		if i%100 == 0 {
			runtime.GC()
		}
	}
	if len(pt.m) >= 1000 {
		t.Fatalf("%d entries kept for 1000 lists nobody uses", len(pt.m))
	}
}

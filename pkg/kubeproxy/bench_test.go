package kubeproxy

import (
	"fmt"
	"runtime"
	"testing"
)

// benchTPs is the benchmark's TP set: 3 TPs, as in the issue.
var benchTPs = []int{0, 1, 2}

type benchObjects struct {
	services  map[int][]*Service
	endpoints map[int][]*Endpoints
}

// benchWorld builds perTP services with 3 endpoints each in every TP, as the
// handlers receive them: records carrying their tenant. Every TP has the
// same names (system and regular tenants alike) with its own addresses, the
// case the view must keep apart.
func benchWorld(perTP int) benchObjects { return benchWorldOf(perTP, 3) }

// benchWorldOf is benchWorld with k endpoints a service.
func benchWorldOf(perTP, k int) benchObjects {
	w := benchObjects{services: map[int][]*Service{}, endpoints: map[int][]*Endpoints{}}
	for _, tp := range benchTPs {
		for i := 0; i < perTP; i++ {
			tenant := "system"
			if i%2 == 1 {
				tenant = fmt.Sprintf("t%d", i%50)
			}
			ns, name := fmt.Sprintf("ns%d", i%100), fmt.Sprintf("svc%d", i)
			ip := fmt.Sprintf("10.%d.%d.%d", 96+tp, (i>>8)&255, i&255)
			w.services[tp] = append(w.services[tp], svcRec(tenant, ns, name, ip, port("http", 80)))
			eps := make([]epSpec, k)
			for j := range eps {
				n := i*k + j
				eps[j] = epSpec{ip: fmt.Sprintf("172.%d.%d.%d", 16+tp*4+n>>16, n>>8&255, n&255)}
			}
			w.endpoints[tp] = append(w.endpoints[tp], epsRec(tenant, ns, name+"-abcde", name, "http", 8080, eps...))
		}
	}
	return w
}

func (w benchObjects) feed(v *View) {
	for _, tp := range benchTPs {
		for _, s := range w.services[tp] {
			v.OnServiceAdd(s, tp)
		}
		for _, e := range w.endpoints[tp] {
			v.OnEndpointsAdd(e, tp)
		}
		v.OnServiceSynced(tp)
		v.OnEndpointsSynced(tp)
	}
}

// BenchmarkInitialEvents feeds the initial list of 3 TPs × 10k services ×
// 3 endpoints through the handler methods, as informers do before they
// report synced. (testbed/kubeproxyk8s's BenchmarkInitialEventsFromAPI adds the
// conversion from API objects.)
func BenchmarkInitialEvents(b *testing.B) {
	w := benchWorld(10000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := NewView(benchTPs, Options{})
		w.feed(v)
	}
}

// BenchmarkSyncedToFirstSnapshot is the time from "every TP synced" (all
// initial events delivered) to the first complete snapshot.
func BenchmarkSyncedToFirstSnapshot(b *testing.B) {
	w := benchWorld(10000)
	v := NewView(benchTPs, Options{})
	w.feed(v)
	b.ReportAllocs()
	b.ResetTimer()
	var s *Snapshot
	for i := 0; i < b.N; i++ {
		s = NewSnapshot()
		if c := v.Apply(s); !c.Full {
			b.Fatal("first apply was not full")
		}
	}
	b.StopTimer()
	if s.Len() != 30000 {
		b.Fatalf("snapshot has %d ports, want 30000", s.Len())
	}
	for p := range s.All() {
		if len(p.Endpoints) != 3 {
			b.Fatalf("%s has %d endpoints", p.Name, len(p.Endpoints))
		}
	}
}

// BenchmarkServiceUpdate is one endpoints update of one service, and the
// incremental Apply that follows, at two total sizes: its cost must not
// depend on the number of services.
func BenchmarkServiceUpdate(b *testing.B) {
	for _, perTP := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("services=%d", perTP*len(benchTPs)), func(b *testing.B) {
			w := benchWorld(perTP)
			v := NewView(benchTPs, Options{})
			w.feed(v)
			s := NewSnapshot()
			v.Apply(s)
			// Two states of one object in TP 1, alternated so every update
			// is a real change.
			a := w.endpoints[1][perTP/2]
			bb := *a
			bb.Endpoints = a.Endpoints[:2]
			states := [2]*Endpoints{&bb, a}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v.OnEndpointsUpdate(states[(i+1)%2], states[i%2], 1)
				if c := v.Apply(s); len(c.Services) != 1 {
					b.Fatalf("apply changed %d services", len(c.Services))
				}
			}
		})
	}
}

// BenchmarkLiveBytes reports what the view and a proxier's snapshot keep
// at the node size of the Arktos-scale goal, 3 TPs × 10k services × 10 endpoints, once
// applied: live heap bytes per endpoint (the records, like an informer's
// objects, are not counted).
func BenchmarkLiveBytes(b *testing.B) {
	w := benchWorldOf(10000, 10)
	for _, eps := range w.endpoints {
		for _, e := range eps {
			e.Name = e.Service // core/v1 Endpoints, as Arktos has
		}
	}
	live := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	b.ReportAllocs()
	var perEndpoint float64
	for i := 0; i < b.N; i++ {
		before := live()
		v := NewView(benchTPs, Options{})
		w.feed(v)
		s := NewSnapshot()
		v.Apply(s)
		perEndpoint = float64(live()-before) / float64(len(benchTPs)*10000*10)
		runtime.KeepAlive(v)
		runtime.KeepAlive(s)
	}
	b.ReportMetric(perEndpoint, "live-B/endpoint")
}

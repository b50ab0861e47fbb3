package kubeproxy

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// benchTPs is the benchmark's TP set: 3 TPs, as in the issue.
var benchTPs = []string{"tp1", "tp2", "tp3"}

type benchObjects struct {
	services map[string][]*corev1.Service
	slices   map[string][]*discoveryv1.EndpointSlice
}

// benchWorld builds perTP services with 3 endpoints each in every TP, as an
// informer would deliver them: typed objects carrying their tenant.
// Every TP has the same names (system and regular tenants alike) with its
// own addresses, the case the view must keep apart.
func benchWorld(perTP int) benchObjects {
	w := benchObjects{services: map[string][]*corev1.Service{}, slices: map[string][]*discoveryv1.EndpointSlice{}}
	for ti, tp := range benchTPs {
		for i := 0; i < perTP; i++ {
			tenant := "system"
			if i%2 == 1 {
				tenant = fmt.Sprintf("t%d", i%50)
			}
			ns, name := fmt.Sprintf("ns%d", i%100), fmt.Sprintf("svc%d", i)
			ip := fmt.Sprintf("10.%d.%d.%d", 96+ti, (i>>8)&255, i&255)
			w.services[tp] = append(w.services[tp], svcObj(tenant, ns, name, ip, port("http", 80)))
			eps := make([]epSpec, 3)
			for j := range eps {
				eps[j] = epSpec{ip: fmt.Sprintf("172.%d.%d.%d", 16+ti, (i*3+j)>>8&255, (i*3+j)&255)}
			}
			w.slices[tp] = append(w.slices[tp], sliceObj(tenant, ns, name+"-abcde", name, "http", 8080, eps...))
		}
	}
	return w
}

func (w benchObjects) feed(v *View) {
	for _, tp := range benchTPs {
		for _, s := range w.services[tp] {
			v.OnServiceAdd(tp, s)
		}
		for _, es := range w.slices[tp] {
			v.OnEndpointSliceAdd(tp, es)
		}
	}
	v.OnServiceSynced()
	v.OnEndpointSlicesSynced()
}

// BenchmarkInitialEvents feeds the initial list of 3 TPs × 10k services ×
// 3 endpoints through the handler methods, as informers do before they
// report synced.
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

// BenchmarkServiceUpdate is one endpoint-slice update of one service, and the
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
			// Two states of one slice in TP2, alternated so every update is
			// a real change.
			a := w.slices["tp2"][perTP/2]
			bb := a.DeepCopy()
			bb.Endpoints = bb.Endpoints[:2]
			states := [2]*discoveryv1.EndpointSlice{bb, a}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v.OnEndpointSliceUpdate("tp2", states[(i+1)%2], states[i%2])
				if c := v.Apply(s); len(c.Services) != 1 {
					b.Fatalf("apply changed %d services", len(c.Services))
				}
			}
		})
	}
}

package iptables

import (
	"context"
	"fmt"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
)

var benchTPs = []int{0, 1, 2}

// benchView holds perTP services with 3 endpoints each in each of 3 TPs,
// fed through the handler methods as informers do. It returns the view, a
// snapshot applied from it, and the slice objects for updates.
func benchView(b *testing.B, perTP int) (*kubeproxy.View, *kubeproxy.Snapshot, map[int][]*kubeproxy.Endpoints) {
	b.Helper()
	v := kubeproxy.NewView(benchTPs, kubeproxy.Options{})
	slices := map[int][]*kubeproxy.Endpoints{}
	for ti, tp := range benchTPs {
		for i := 0; i < perTP; i++ {
			tenant := "system"
			if i%2 == 1 {
				tenant = fmt.Sprintf("t%d", i%50)
			}
			ns, n := fmt.Sprintf("ns%d", i%100), fmt.Sprintf("svc%d", i)
			v.OnServiceAdd(svc(tenant, ns, n, fmt.Sprintf("10.%d.%d.%d", 96+ti, (i>>8)&255, i&255), "http", 80), tp)
			var ips []string
			for j := 0; j < 3; j++ {
				ips = append(ips, fmt.Sprintf("172.%d.%d.%d", 16+ti, (i*3+j)>>8&255, (i*3+j)&255))
			}
			es := slice(tenant, ns, n+"-abcde", n, "http", 8080, ips...)
			slices[tp] = append(slices[tp], es)
			v.OnEndpointsAdd(es, tp)
		}
	}
	s := kubeproxy.NewSnapshot()
	v.Apply(s)
	if s.Len() != perTP*len(benchTPs) {
		b.Fatalf("snapshot has %d ports", s.Len())
	}
	return v, s, slices
}

// BenchmarkRenderFull renders every rule of 3 TPs × N services × 3
// endpoints.
func BenchmarkRenderFull(b *testing.B) {
	for _, perTP := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("services=%d", perTP*3), func(b *testing.B) {
			_, s, _ := benchView(b, perTP)
			var r Renderer
			b.ReportAllocs()
			b.ResetTimer()
			var p *Plan
			for i := 0; i < b.N; i++ {
				p = r.RenderFull(s, nil)
			}
			b.ReportMetric(float64(p.Result.Bytes), "bytes/restore")
			b.ReportMetric(float64(p.Result.Rules), "rules")
		})
	}
}

// BenchmarkRenderPartial renders one service's endpoint change against the
// same totals: its cost must not depend on the number of services.
func BenchmarkRenderPartial(b *testing.B) {
	for _, perTP := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("services=%d", perTP*3), func(b *testing.B) {
			v, s, slices := benchView(b, perTP)
			var r Renderer
			r.Commit(r.RenderFull(s, nil))
			a := slices[1][perTP/2]
			c := *a
			c.Endpoints = a.Endpoints[:2]
			states := [2]*kubeproxy.Endpoints{&c, a}
			b.ReportAllocs()
			b.ResetTimer()
			var p *Plan
			for i := 0; i < b.N; i++ {
				v.OnEndpointsUpdate(nil, states[i%2], 1)
				ch := v.Apply(s)
				p = r.RenderPartial(s, ch.Services)
				r.Commit(p)
			}
			b.ReportMetric(float64(p.Result.Bytes), "bytes/restore")
		})
	}
}

// BenchmarkNetnsApply programs the rules into the kernel inside a network
// namespace with iptables-restore: a full sync, then one service's update.
// It needs root; otherwise it is skipped. iptables-nft's restore time grows
// faster than linearly with the number of chains, so the sizes stay small
// (see docs/benchmarks.md).
func BenchmarkNetnsApply(b *testing.B) {
	for _, perTP := range []int{100, 1000} {
		b.Run(fmt.Sprintf("services=%d", perTP*3), func(b *testing.B) {
			ns := benchNetns(b)
			v, s, slices := benchView(b, perTP)
			var p *Proxier
			if err := in(ns, func() (err error) { p, err = New(Options{}); return err }); err != nil {
				b.Fatal(err)
			}
			b.Run("full", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if err := in(ns, func() error {
						_, err := p.Apply(context.Background(), s, kubeproxy.Changes{Full: true})
						return err
					}); err != nil {
						b.Fatal(err)
					}
				}
			})
			a := slices[1][perTP/2]
			c := *a
			c.Endpoints = a.Endpoints[:2]
			states := [2]*kubeproxy.Endpoints{&c, a}
			k := 0 // alternates across the runs of the sub-benchmark
			b.Run("one-service", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					v.OnEndpointsUpdate(nil, states[k%2], 1)
					k++
					ch := v.Apply(s)
					var res Result
					if err := in(ns, func() (err error) { res, err = p.Apply(context.Background(), s, ch); return err }); err != nil {
						b.Fatal(err)
					}
					if res.Services != 1 {
						b.Fatalf("rewrote %+v", res)
					}
				}
			})
		})
	}
}

// benchNetns creates a throwaway namespace for a benchmark.
func benchNetns(b *testing.B) string {
	b.Helper()
	requireNetns(b)
	return newNetnsEnv(b).client
}

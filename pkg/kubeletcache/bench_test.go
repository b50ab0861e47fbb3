package kubeletcache_test

import (
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/kubeletcache"
)

// BenchmarkGetCached reads a configmap the manager already holds, against
// two fake TPs: Cache within its TTL, and Watch with a synced reflector.
// The object returned is the cached one, so a read allocates nothing.
func BenchmarkGetCached(b *testing.B) {
	for _, s := range []kubeletcache.Strategy{kubeletcache.Cache, kubeletcache.Watch} {
		b.Run(string(s), func(b *testing.B) {
			e := newEnvTB(b)
			cms, err := kubeletcache.NewConfigMapManager(e.set, e.chooser, e.options(s))
			if err != nil {
				b.Fatal(err)
			}
			defer cms.Close()
			if err := cms.RegisterPod(e.podA); err != nil {
				b.Fatal(err)
			}
			if _, err := getCM(cms, e.podA, "cfg"); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				cm, err := getCM(cms, e.podA, "cfg")
				if err != nil || cm.Data["from"] != "tp1" {
					b.Fatal(cm, err)
				}
			}
		})
	}
}

// BenchmarkGetDirect is the Get strategy: one GET to the fake TP per read,
// for comparison in the same run.
func BenchmarkGetDirect(b *testing.B) {
	e := newEnvTB(b)
	cms, err := kubeletcache.NewConfigMapManager(e.set, e.chooser, e.options(kubeletcache.Get))
	if err != nil {
		b.Fatal(err)
	}
	defer cms.Close()
	if err := cms.RegisterPod(e.podA); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := getCM(cms, e.podA, "cfg"); err != nil {
			b.Fatal(err)
		}
	}
}

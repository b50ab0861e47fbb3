package tporigin

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
)

// uid returns a UID shaped like the API server's: a random-looking UUID.
func uid(i int) string {
	h := uint64(i)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", uint32(h>>32), uint16(h>>16), uint16(h)&0xfff, i&0xfff, uint64(i)*0x2545f4914f6cdd1d&0xffffffffffff)
}

func fill(tb testing.TB, tr *Tracker, n int) []string {
	uids := make([]string, n)
	for i := range uids {
		uids[i] = uid(i)
		tp := "tp1"
		if i%3 == 1 {
			tp = "tp2"
		}
		tenant := ""
		if i%5 == 0 {
			tenant = fmt.Sprintf("tenant-%s-%d", tp, i%100)
		}
		if _, err := tr.Observe(Observation{UID: uids[i], Kind: KindPod, Partition: tp, Tenant: tenant}); err != nil {
			tb.Fatal(err)
		}
	}
	return uids
}

// BenchmarkOriginOf looks up known UIDs in trackers of a node's size (1k:
// pods and the services a node's kube-proxy sees in a small cluster) up to
// 1M, where every lookup misses the CPU caches.
func BenchmarkOriginOf(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprint("entries=", n), func(b *testing.B) {
			tr := mustOpen(b, Options{Partitions: []string{"tp1", "tp2"}})
			uids := fill(b, tr, n)
			b.ReportAllocs()
			i := 0
			cpu := startCPU()
			for b.Loop() {
				if _, ok := tr.OriginOf(uids[i]); !ok {
					b.Fatal("not found")
				}
				i++
				if i == len(uids) {
					i = 0
				}
			}
			cpu.report(b)
		})
	}
}

// BenchmarkOriginOfNotFound looks up unknown UIDs.
func BenchmarkOriginOfNotFound(b *testing.B) {
	tr := mustOpen(b, Options{Partitions: []string{"tp1", "tp2"}})
	fill(b, tr, 10_000)
	missing := uid(-1)
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		if _, ok := tr.OriginOf(missing); ok {
			b.Fatal("found")
		}
	}
	cpu.report(b)
}

// BenchmarkOriginOfParallel is OriginOf from every core at once.
func BenchmarkOriginOfParallel(b *testing.B) {
	tr := mustOpen(b, Options{Partitions: []string{"tp1", "tp2"}})
	uids := fill(b, tr, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			tr.OriginOf(uids[i])
			i = (i + 7) % len(uids)
		}
	})
}

// BenchmarkPersist100k records 100k new origins and makes them durable: one
// op is the whole 100k, from the first Observe to Flush's return.
func BenchmarkPersist100k(b *testing.B) {
	const n = 100_000
	uids := make([]string, n)
	for i := range uids {
		uids[i] = uid(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		tr, err := Open(Options{Path: filepath.Join(b.TempDir(), "o.db")})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for _, u := range uids {
			if _, err := tr.Observe(Observation{UID: u, Kind: KindPod, Partition: "tp1"}); err != nil {
				b.Fatal(err)
			}
		}
		if err := tr.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		tr.Close()
		b.StartTimer()
	}
}

// BenchmarkLoad1M opens a file of 1M origins: one op is one Open.
func BenchmarkLoad1M(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "o.db")
	tr, err := Open(Options{Path: path, Partitions: []string{"tp1", "tp2"}})
	if err != nil {
		b.Fatal(err)
	}
	fill(b, tr, n)
	if err := tr.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		tr, err := Open(Options{Path: path, Partitions: []string{"tp1", "tp2"}})
		if err != nil {
			b.Fatal(err)
		}
		if tr.Len() != n {
			b.Fatalf("loaded %d", tr.Len())
		}
		b.StopTimer()
		tr.Close()
		b.StartTimer()
	}
}

// BenchmarkMemory1M reports the live heap of a tracker holding 1M origins
// (bytes/entry), without a file.
func BenchmarkMemory1M(b *testing.B) {
	const n = 1_000_000
	uids := make([]string, n)
	for i := range uids {
		uids[i] = uid(i)
	}
	var perEntry float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		tr, err := Open(Options{Partitions: []string{"tp1", "tp2"}})
		if err != nil {
			b.Fatal(err)
		}
		for i, u := range uids {
			tp := "tp1"
			if i%3 == 1 {
				tp = "tp2"
			}
			// Clone: the tracker owns its keys, as it does for strings
			// decoded by an informer.
			if _, err := tr.Observe(Observation{UID: string([]byte(u)), Kind: KindPod, Partition: tp}); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perEntry = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(tr)
	}
	b.ReportMetric(perEntry, "heapbytes/entry")
	b.ReportMetric(perEntry*n/(1<<20), "MiB/1M")
}

// BenchmarkBaselineMapLookup is a plain map[string]string lookup without a
// lock over the same UIDs: the floor OriginOf is compared with in the same
// run, since this machine is shared and absolute figures drift.
func BenchmarkBaselineMapLookup(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint("entries=", n), func(b *testing.B) {
			m := make(map[string]string, n)
			uids := make([]string, n)
			for i := range uids {
				uids[i] = uid(i)
				m[string([]byte(uid(i)))] = "tp1"
			}
			b.ReportAllocs()
			i := 0
			cpu := startCPU()
			for b.Loop() {
				if _, ok := m[uids[i]]; !ok {
					b.Fatal("not found")
				}
				i++
				if i == len(uids) {
					i = 0
				}
			}
			cpu.report(b)
		})
	}
}

// BenchmarkParseUUID is the UUID parse on OriginOf's path.
func BenchmarkParseUUID(b *testing.B) {
	s := uid(42)
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		if _, ok := parseUUIDString(s); !ok {
			b.Fatal(s)
		}
	}
	cpu.report(b)
}

// BenchmarkParseUUIDTable is the plain table-driven parser (used when
// loading the file), for comparison with the SWAR one in the same run.
func BenchmarkParseUUIDTable(b *testing.B) {
	s := uid(42)
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		if _, ok := parseUUID(s); !ok {
			b.Fatal(s)
		}
	}
	cpu.report(b)
}

package faketp_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
)

// Benchmarks for docs/benchmarks.md (## fake-tp). Commands are there; the
// watch benchmarks are meant for -benchtime=1x or small counts.

func BenchmarkList10kPods(b *testing.B) {
	c := faketp.StartT(b, faketp.Options{Partitions: 1})
	tp := c.TPs()[0]
	if err := tp.Generate(faketp.GenerateOptions{Namespaces: 100, Pods: 10000}); err != nil {
		b.Fatal(err)
	}
	b.Run("http", func(b *testing.B) {
		// The server's side: one GET of all 10k pods, body read and dropped.
		var n int64
		b.ReportAllocs()
		for b.Loop() {
			res, err := http.Get(tp.URL() + "/api/v1/pods")
			if err != nil {
				b.Fatal(err)
			}
			n, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if err != nil || res.StatusCode != 200 {
				b.Fatal(err, res.StatusCode)
			}
		}
		b.SetBytes(n)
		b.ReportMetric(float64(n), "bytes/list")
	})
	b.Run("client-go", func(b *testing.B) {
		// What a tpkit component pays: typed list through tenancyk8s.WrapConfig
		// (JSON decode and the metadata.tenant lift included).
		cs := tpClient(b, tp)
		b.ReportAllocs()
		for b.Loop() {
			l, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
			if err != nil || len(l.Items) != 10000 {
				b.Fatal(err)
			}
		}
	})
	b.Run("client-go-unwrapped", func(b *testing.B) {
		// The same JSON list without the tenancy transport, for comparison.
		cfg := tp.RESTConfig()
		cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
		cs, err := partitiontest.NewClients(cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			l, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
			if err != nil || len(l.Items) != 10000 {
				b.Fatal(err)
			}
		}
	})
	b.Run("http-page-500", func(b *testing.B) {
		// A reflector-style paged list (limit=500): 20 requests.
		b.ReportAllocs()
		for b.Loop() {
			cont, items := "", 0
			for {
				res, err := http.Get(tp.URL() + "/api/v1/pods?limit=500&continue=" + cont)
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
				items += bytes.Count(body, []byte(`"kind":"Pod"`))
				cont = ""
				if m := continueRE.FindSubmatch(body); m != nil {
					cont = string(m[1])
				}
				if cont == "" {
					break
				}
			}
			if items != 10000 {
				b.Fatal(items)
			}
		}
	})
}

var continueRE = regexp.MustCompile(`"continue":"([^"]+)"`)

// watchers opens n raw watch streams on configmaps from the current version
// and calls onEvent for every event line each receives.
func watchers(b *testing.B, tp *faketp.TP, n int, onEvent func(line []byte)) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	rv := tp.Store().RV()
	before := tp.RequestCount("watch", "configmaps")
	for i := 0; i < n; i++ {
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/v1/configmaps?watch=1&resourceVersion=%d", tp.URL(), rv), nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				onEvent(sc.Bytes())
			}
		}()
	}
	for tp.RequestCount("watch", "configmaps") < before+n {
		time.Sleep(time.Millisecond)
	}
	return func() { cancel(); wg.Wait() }
}

func BenchmarkWatchFanout50(b *testing.B) {
	c := faketp.StartT(b, faketp.Options{Partitions: 1, History: 1 << 20})
	tp := c.TPs()[0]
	const nWatchers = 50
	var delivered atomic.Int64
	stop := watchers(b, tp, nWatchers, func([]byte) { delivered.Add(1) })
	defer stop()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"i": ""}}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		cm.Data["i"] = strconv.Itoa(i)
		if err := tp.Seed(cm); err != nil {
			b.Fatal(err)
		}
	}
	want := int64(b.N) * nWatchers
	for delivered.Load() < want {
		time.Sleep(100 * time.Microsecond)
	}
	el := time.Since(start)
	b.ReportMetric(float64(want)/el.Seconds(), "deliveries/s")
	b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
}

// BenchmarkWatchLatency50At1k writes 1000 events per second for two
// seconds and measures, per delivered event, the time from the write to the
// watcher decoding it.
func BenchmarkWatchLatency50At1k(b *testing.B) {
	c := faketp.StartT(b, faketp.Options{Partitions: 1, History: 1 << 20})
	tp := c.TPs()[0]
	const nWatchers, rate, events = 50, 1000, 2000
	var mu sync.Mutex
	var lat []time.Duration
	stop := watchers(b, tp, nWatchers, func(line []byte) {
		// The write time is the annotation "t"; found without a full
		// decode, so that the figure is the server's delivery, not the
		// benchmark client's JSON parsing.
		i := bytes.Index(line, []byte(`"t":"`))
		if i < 0 {
			return
		}
		v := line[i+5:]
		j := bytes.IndexByte(v, '"')
		if j < 0 {
			return
		}
		ns, err := strconv.ParseInt(string(v[:j]), 10, 64)
		if err != nil {
			return
		}
		d := time.Since(time.Unix(0, ns))
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
	})
	defer stop()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", Annotations: map[string]string{}}}
	b.ReportAllocs()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		mu.Lock()
		lat = lat[:0]
		mu.Unlock()
		start := time.Now()
		for i := 0; i < events; i++ {
			if d := time.Until(start.Add(time.Duration(i) * time.Second / rate)); d > 0 {
				time.Sleep(d)
			}
			cm.Annotations["t"] = strconv.FormatInt(time.Now().UnixNano(), 10)
			if err := tp.Seed(cm); err != nil {
				b.Fatal(err)
			}
		}
		for {
			mu.Lock()
			n := len(lat)
			mu.Unlock()
			if n >= events*nWatchers {
				break
			}
			time.Sleep(time.Millisecond)
		}
		b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
}

// BenchmarkMemory100kObjects reports the heap a TP holds for 100k objects
// (70k pods, 10k each of services, their Endpoints and configmaps, in 1000
// namespaces), event history included.
func BenchmarkMemory100kObjects(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c, err := faketp.Start(context.Background(), faketp.Options{Partitions: 1})
		if err != nil {
			b.Fatal(err)
		}
		tp := c.TPs()[0]
		o := faketp.GenerateOptions{Namespaces: 1000, Pods: 70000, Services: 10000, ConfigMaps: 10000}
		if err := tp.Generate(o); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		objects := o.Namespaces + o.Pods + 2*o.Services + o.ConfigMaps // services and their Endpoints
		heap := float64(after.HeapAlloc - before.HeapAlloc)
		var size int
		for _, r := range []string{"pods", "services", "endpoints", "configmaps", "namespaces"} {
			objs, _, _ := tp.Store().List(r, store.ListOptions{})
			for _, o := range objs {
				size += len(o.Data)
			}
		}
		b.ReportMetric(heap/float64(objects)*100000/(1<<20), "MiB/100k-objects")
		b.ReportMetric(heap/float64(objects), "B/object")
		b.ReportMetric(float64(size)/float64(objects), "JSON-B/object")
		runtime.KeepAlive(tp)
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGenerate is fake-tp --generate 12500 in one TP, controllers on
// (the endpoints controller writes the Endpoints): 12,500 pods, 1,250
// services, their Endpoints and 1,250 configmaps in 125 namespaces, a
// tenth of the per-TP share of the 1.5M-object benchmark. It reports the
// time and allocations per generated object.
func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	o := faketp.Scaled(12500)
	objects := o.Namespaces + o.Pods + 2*o.Services + o.ConfigMaps
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c, err := faketp.Start(context.Background(), faketp.Options{Partitions: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := c.TPs()[0].Generate(o); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*objects), "ns/object")
}

// Command node runs what a node runs in process against the TPs of make
// bench-scale, one part per process so that its memory is its own: the
// kube-proxy view (--part proxy: services and endpoints of every tenant of
// every TP) or the origin tracker (--part origin: every service's and
// endpoint's UID, and the pods of one node). It prints the time from start
// to the first complete view (the first programming), the live heap after
// a GC, and the peak RSS.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/testbed/kubeproxyk8s"
	tporigink8s "github.com/tpkit-dev/tpkit/testbed/tporigink8s"
)

func main() {
	kubeconfigs := flag.String("kubeconfigs", "", "Comma-separated TP kubeconfigs.")
	part := flag.String("part", "proxy", "proxy (the kube-proxy view) or origin (the tporigin tracker).")
	dir := flag.String("dir", os.TempDir(), "Directory for the tracker's database.")
	heapProfile := flag.String("heap-profile", "", "When set, write a heap profile (go tool pprof) here once the view is complete.")
	flag.Parse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	set, err := partition.New(partition.Options{KubeconfigPaths: strings.Split(*kubeconfigs, ",")})
	if err != nil {
		fail(err)
	}
	var synced func() bool
	var size func() int
	switch *part {
	case "proxy":
		view := kubeproxy.NewView(kubeproxyk8s.PartitionsOf(set).IDs(), kubeproxy.Options{})
		src, err := kubeproxyk8s.NewSource(set, []kubeproxy.ServiceHandler{view}, []kubeproxy.EndpointsHandler{view}, kubeproxyk8s.SourceOptions{})
		if err != nil {
			fail(err)
		}
		set.Start(ctx)
		go src.Run(ctx)
		synced = view.Synced
		size = func() int { return view.Snapshot().Len() }
	case "origin":
		var names []string
		for _, p := range set.Partitions() {
			names = append(names, p.Name)
		}
		tracker, err := tporigin.Open(tporigin.Options{Path: filepath.Join(*dir, "tporigin.db"), Partitions: names})
		if err != nil {
			fail(err)
		}
		defer tracker.Close()
		wiring, err := tporigink8s.Wire(tracker, set, tporigink8s.WireOptions{NodeName: "node-1", Services: true, Endpoints: true})
		if err != nil {
			fail(err)
		}
		go tracker.Run(ctx)
		set.Start(ctx)
		wiring.Start(ctx)
		synced = wiring.HasSynced
		size = func() int {
			n := 0
			for _, e := range tracker.Stats().Entries {
				n += e.Count
			}
			return n
		}
	default:
		fail(fmt.Errorf("--part %q: want proxy or origin", *part))
	}
	for !synced() {
		time.Sleep(10 * time.Millisecond)
	}
	ready := time.Since(start)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if *heapProfile != "" {
		if err := writeHeapProfile(*heapProfile); err != nil {
			fail(err)
		}
	}
	fmt.Printf("part %s ready_s %.2f entries %d heap_mb %.0f peak_rss_mb %d\n", *part, ready.Seconds(), size(),
		float64(ms.HeapAlloc)/(1<<20), peakRSS()/1024)
}

// peakRSS is VmHWM in kB.
func peakRSS() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			var kb int
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")), "%d", &kb)
			return kb
		}
	}
	return 0
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "node:", err)
	os.Exit(1)
}

// writeHeapProfile writes the heap profile as of the last GC to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

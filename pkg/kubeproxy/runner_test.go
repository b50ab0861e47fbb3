package kubeproxy

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type call struct {
	c      Changes
	ports  int
	synced bool
}

func TestRunner(t *testing.T) {
	v := NewView([]string{"tp1", "tp2"}, Options{})
	calls := make(chan call)
	release := make(chan error)
	fn := func(_ context.Context, s *Snapshot, c Changes) error {
		calls <- call{c: c, ports: s.Len(), synced: v.Synced()}
		return <-release
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		NewRunner(v, fn, RunnerOptions{MinInterval: time.Millisecond, RetryInterval: time.Millisecond, Metrics: m}).Run(ctx)
		close(done)
	}()

	v.OnServiceAdd("tp1", svcObj("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)))
	v.OnServiceAdd("tp2", svcObj("", "kube-system", "kube-dns", "10.1.0.10", port("dns", 53)))
	v.OnServiceSynced()
	v.OnEndpointSlicesSynced()
	first := <-calls
	if !first.synced || !first.c.Full || first.ports != 2 {
		t.Fatalf("first sync %+v: want a full one with 2 ports, after every TP synced", first)
	}
	// While the dataplane is busy, changes pile up and come as one batch.
	for i := 0; i < 5; i++ {
		v.OnServiceAdd("tp1", svcObj("", "default", fmt.Sprintf("s%d", i), fmt.Sprintf("10.0.1.%d", i), port("p", 80)))
	}
	release <- nil
	batch := <-calls
	if batch.c.Full || len(batch.c.Services) != 5 || batch.ports != 7 {
		t.Fatalf("batched sync %+v, want 5 changed services, 7 ports", batch)
	}
	// The batch fails: it is retried as a full one, with no new event.
	release <- errors.New("iptables-restore failed")
	retry := <-calls
	if !retry.c.Full {
		t.Fatalf("retry %+v, want full", retry)
	}
	release <- nil
	// The next change is partial again.
	v.OnServiceDelete("tp2", svcObj("", "kube-system", "kube-dns", "10.1.0.10"))
	next := <-calls
	if next.c.Full || len(next.c.Services) != 1 || next.ports != 6 {
		t.Fatalf("after recovery %+v", next)
	}
	release <- nil
	cancel()
	<-done
	for _, c := range []struct {
		kind, result string
		want         float64
	}{{"full", "ok", 2}, {"partial", "error", 1}, {"partial", "ok", 1}, {"full", "error", 0}} {
		if got := testutil.ToFloat64(m.syncs.WithLabelValues(c.kind, c.result)); got != c.want {
			t.Errorf("syncs{kind=%s,result=%s} = %v, want %v", c.kind, c.result, got, c.want)
		}
	}
}

func TestViewMetrics(t *testing.T) {
	v := NewView([]string{"tp1"}, Options{})
	reg := prometheus.NewRegistry()
	if err := RegisterViewMetrics(reg, v); err != nil {
		t.Fatal(err)
	}
	v.OnServiceAdd("tp9", svcObj("", "ns", "x", "10.0.0.1", port("p", 1)))
	v.OnServiceAdd("tp1", svcObj("", "ns", "y", "bad-ip", port("p", 1)))
	v.OnServiceAdd("tp1", svcObj("", "ns", "z", "10.0.0.2", port("p", 1)))
	want := map[string]float64{"tpkit_kubeproxy_dropped_events_total": 1, "tpkit_kubeproxy_skipped_objects_total": 1, "tpkit_kubeproxy_pending_services": 2}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		got := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		if w, ok := want[mf.GetName()]; !ok || got != w {
			t.Errorf("%s = %v, want %v", mf.GetName(), got, w)
		}
		delete(want, mf.GetName())
	}
	if len(want) != 0 {
		t.Errorf("missing metrics %v", want)
	}
}

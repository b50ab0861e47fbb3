package k8s_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/pkg/kubeproxy/k8s"
)

func rec(ns, name, ip string) *kubeproxy.Service {
	return &kubeproxy.Service{Namespace: ns, Name: name, ClusterIPs: []string{ip}, Ports: []kubeproxy.ServicePort{{Name: "p", Port: 1}}}
}

// TestRunnerMetrics: a runner's syncs, fed to Metrics.Observe, are today's
// tpkit_kubeproxy_* series.
func TestRunnerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := kubeproxyk8s.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	v := kubeproxy.NewView([]int{0}, kubeproxy.Options{})
	results := make(chan error)
	done := make(chan kubeproxy.SyncEvent)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go kubeproxy.NewRunner(v, func(context.Context, *kubeproxy.Snapshot, kubeproxy.Changes) error { return <-results },
		kubeproxy.RunnerOptions{MinInterval: time.Millisecond, RetryInterval: time.Millisecond, Logf: kubeproxyk8s.Logf,
			OnSync: func(e kubeproxy.SyncEvent) { m.Observe(e); done <- e }}).Run(ctx)

	v.OnServiceAdd(rec("ns", "a", "10.0.0.1"), 0)
	v.OnServiceSynced(0)
	v.OnEndpointsSynced(0)
	results <- nil // full, ok
	<-done
	v.OnServiceAdd(rec("ns", "b", "10.0.0.2"), 0)
	results <- errors.New("restore failed") // partial, error
	<-done
	results <- nil // the retry: full, ok
	<-done
	v.OnServiceAdd(rec("ns", "c", "10.0.0.3"), 0)
	results <- nil // partial, ok
	<-done
	cancel()

	for _, c := range []struct {
		kind, result string
		want         float64
	}{{"full", "ok", 2}, {"partial", "error", 1}, {"partial", "ok", 1}, {"full", "error", 0}} {
		if got := value(t, reg, "tpkit_kubeproxy_syncs_total", "kind", c.kind, "result", c.result); got != c.want {
			t.Errorf("syncs{kind=%s,result=%s} = %v, want %v", c.kind, c.result, got, c.want)
		}
	}
	for name, want := range map[string]float64{
		"tpkit_kubeproxy_service_ports": 3, "tpkit_kubeproxy_changed_services_total": 2, "tpkit_kubeproxy_last_sync_failed": 0,
	} {
		if got := value(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := value(t, reg, "tpkit_kubeproxy_last_sync_timestamp_seconds"); got < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last sync timestamp %v", got)
	}
	if n, err := testutil.GatherAndCount(reg, "tpkit_kubeproxy_sync_duration_seconds"); err != nil || n != 2 {
		t.Errorf("duration histograms: %d, %v; want one per kind", n, err)
	}
}

// value is the value of one series of a counter or gauge: the one whose
// labels include labels (name, value pairs).
func value(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			return m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
		return 0 // no such series yet
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func TestViewMetrics(t *testing.T) {
	v := kubeproxy.NewView([]int{0}, kubeproxy.Options{})
	reg := prometheus.NewRegistry()
	if err := kubeproxyk8s.RegisterViewMetrics(reg, v); err != nil {
		t.Fatal(err)
	}
	v.OnServiceAdd(rec("ns", "x", "10.0.0.1"), 9)
	v.OnServiceAdd(rec("ns", "y", "bad-ip"), 0)
	v.OnServiceAdd(rec("ns", "z", "10.0.0.2"), 0)
	want := map[string]float64{"tpkit_kubeproxy_dropped_events_total": 1, "tpkit_kubeproxy_skipped_objects_total": 1, "tpkit_kubeproxy_pending_services": 2}
	for name, w := range want {
		if got := value(t, reg, name); got != w {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != len(want) {
		t.Errorf("%d series, %v; want %d", n, err, len(want))
	}
}

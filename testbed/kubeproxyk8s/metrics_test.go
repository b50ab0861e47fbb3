package kubeproxyk8s_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/testbed/kubeproxyk8s"
)

func rec(ns, name, ip string) *kubeproxy.Service {
	return &kubeproxy.Service{Namespace: ns, Name: name, ClusterIPs: []string{ip}, Ports: []kubeproxy.ServicePort{{Name: "p", Port: 1}}}
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

package kubeproxyk8s

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
)

// RegisterViewMetrics registers v's counters (kubeproxy.View.Stats) on reg:
// records skipped as invalid, events dropped from TPs not served, services
// pending.
func RegisterViewMetrics(reg prometheus.Registerer, v *kubeproxy.View) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tpkit_kubeproxy_skipped_objects_total", Help: "Services and endpoints (or parts of them) skipped as invalid.",
		}, func() float64 { return float64(v.Stats().Skipped) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tpkit_kubeproxy_dropped_events_total", Help: "Events from tenant partitions the view does not serve.",
		}, func() float64 { return float64(v.Stats().Dropped) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tpkit_kubeproxy_pending_services", Help: "Services changed since the last sync.",
		}, func() float64 { return float64(v.Stats().Pending) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

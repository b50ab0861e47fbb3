package k8s

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
)

// Metrics are a kubeproxy.Runner's Prometheus metrics: set Observe as
// RunnerOptions.OnSync. The program owns the registry.
type Metrics struct {
	syncs     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	ports     prometheus.Gauge
	changed   prometheus.Counter
	lastSync  prometheus.Gauge
	lastError prometheus.Gauge
}

// NewMetrics registers the runner metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tpkit_kubeproxy_syncs_total", Help: "Dataplane syncs, by kind (full, partial) and result (ok, error).",
		}, []string{"kind", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tpkit_kubeproxy_sync_duration_seconds", Help: "Time to apply changes to the dataplane.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"kind"}),
		ports: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tpkit_kubeproxy_service_ports", Help: "Service ports in the snapshot, over all TPs.",
		}),
		changed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tpkit_kubeproxy_changed_services_total", Help: "Services handed to partial syncs.",
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tpkit_kubeproxy_last_sync_timestamp_seconds", Help: "When the last successful sync ended.",
		}),
		lastError: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tpkit_kubeproxy_last_sync_failed", Help: "1 when the last sync failed.",
		}),
	}
	for _, c := range []prometheus.Collector{m.syncs, m.duration, m.ports, m.changed, m.lastSync, m.lastError} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Observe records one sync; it is a kubeproxy.RunnerOptions.OnSync.
func (m *Metrics) Observe(e kubeproxy.SyncEvent) {
	kind := "partial"
	if e.Full {
		kind = "full"
	}
	m.duration.WithLabelValues(kind).Observe(e.Duration.Seconds())
	m.ports.Set(float64(e.ServicePorts))
	m.changed.Add(float64(e.ChangedServices))
	if e.Err != nil {
		m.syncs.WithLabelValues(kind, "error").Inc()
		m.lastError.Set(1)
		return
	}
	m.syncs.WithLabelValues(kind, "ok").Inc()
	m.lastError.Set(0)
	m.lastSync.Set(float64(e.End.UnixNano()) / 1e9)
}

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

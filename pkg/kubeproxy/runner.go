package kubeproxy

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// SyncFunc applies a snapshot to a dataplane. c says what changed since the
// previous call; c.Full asks for everything to be rewritten. The snapshot
// belongs to the Runner: read it only during the call.
type SyncFunc func(ctx context.Context, s *Snapshot, c Changes) error

// RunnerOptions bound a Runner's pace.
type RunnerOptions struct {
	// MinInterval is the least time between two syncs; changes arriving
	// meanwhile are batched into the next one. Zero means 1s, upstream
	// kube-proxy's default.
	MinInterval time.Duration
	// RetryInterval is the wait before a full sync after a failed one.
	// Zero means 5s.
	RetryInterval time.Duration
	// Metrics, when set, records syncs.
	Metrics *Metrics
}

// Runner is the bounded sync loop between a View and a dataplane: it waits
// until the view is synced in every TP, applies pending changes to its
// snapshot in batches, at most once per MinInterval, and calls the SyncFunc
// with what changed. After a failed sync it retries with a full sync.
type Runner struct {
	view *View
	fn   SyncFunc
	opts RunnerOptions
	snap *Snapshot
}

// NewRunner returns a runner for v and fn; Run starts it.
func NewRunner(v *View, fn SyncFunc, o RunnerOptions) *Runner {
	if o.MinInterval <= 0 {
		o.MinInterval = time.Second
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = 5 * time.Second
	}
	return &Runner{view: v, fn: fn, opts: o, snap: NewSnapshot()}
}

// Run syncs until ctx ends.
func (r *Runner) Run(ctx context.Context) {
	var last time.Time
	failed := false
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.view.Changed():
		case <-retry:
			retry = nil
		}
		if !r.view.Synced() {
			continue // the first sync must see every TP
		}
		if wait := r.opts.MinInterval - time.Since(last); !last.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		c := r.view.Apply(r.snap)
		if failed {
			c = Changes{Full: true}
		}
		if !c.Full && len(c.Services) == 0 {
			continue
		}
		start := time.Now()
		err := r.fn(ctx, r.snap, c)
		last = time.Now()
		r.opts.Metrics.observe(r.snap, c, err, last.Sub(start))
		if err != nil {
			klog.ErrorS(err, "Dataplane sync failed; retrying with a full sync", "retryIn", r.opts.RetryInterval)
			failed = true
			retry = time.After(r.opts.RetryInterval)
			continue
		}
		failed = false
		klog.V(4).InfoS("Dataplane synced", "full", c.Full, "changedServices", len(c.Services), "servicePorts", r.snap.Len(), "duration", last.Sub(start))
	}
}

// Metrics are a Runner's Prometheus metrics. The program owns the registry.
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

func (m *Metrics) observe(s *Snapshot, c Changes, err error, d time.Duration) {
	if m == nil {
		return
	}
	kind := "partial"
	if c.Full {
		kind = "full"
	}
	m.duration.WithLabelValues(kind).Observe(d.Seconds())
	m.ports.Set(float64(s.Len()))
	m.changed.Add(float64(len(c.Services)))
	if err != nil {
		m.syncs.WithLabelValues(kind, "error").Inc()
		m.lastError.Set(1)
		return
	}
	m.syncs.WithLabelValues(kind, "ok").Inc()
	m.lastError.Set(0)
	m.lastSync.SetToCurrentTime()
}

// RegisterViewMetrics registers v's counters on reg: objects skipped as
// invalid, events dropped from TPs not served, services pending.
func RegisterViewMetrics(reg prometheus.Registerer, v *View) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tpkit_kubeproxy_skipped_objects_total", Help: "Services and endpoint slices (or parts of them) skipped as invalid.",
		}, func() float64 { return float64(v.Skipped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tpkit_kubeproxy_dropped_events_total", Help: "Events from tenant partitions the view does not serve.",
		}, func() float64 { return float64(v.Dropped()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tpkit_kubeproxy_pending_services", Help: "Services changed since the last sync.",
		}, func() float64 { return float64(v.Pending()) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

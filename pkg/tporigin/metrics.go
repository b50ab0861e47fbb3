package tporigin

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are owned by one Tracker and exposed through Collector; nothing is
// registered globally.
type metrics struct {
	tenantsInConflict atomic.Int64
	tenantConflicts   prometheus.Counter
	uidConflictsVec   *prometheus.CounterVec
	prunedVec         *prometheus.CounterVec
	commits           prometheus.Counter
	commitErrors      prometheus.Counter
	commitDuration    prometheus.Histogram
	batchSize         prometheus.Histogram
}

func newMetrics() *metrics {
	return &metrics{
		tenantConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tpkit_tporigin_tenant_conflicts_total",
			Help: "Times a regular tenant was found in more than one tenant partition (or in another than its static one).",
		}),
		uidConflictsVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tpkit_tporigin_uid_conflicts_total",
			Help: "UIDs reported by a tenant partition other than their recorded origin, by the reporting partition; the first origin is kept.",
		}, []string{"partition"}),
		prunedVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tpkit_tporigin_pruned_total",
			Help: "Origins removed after a full sync because the partition no longer reports the object.",
		}, []string{"partition"}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tpkit_tporigin_commits_total",
			Help: "Durable group commits of origin changes to the database file.",
		}),
		commitErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tpkit_tporigin_commit_errors_total",
			Help: "Group commits that failed; their changes stay queued and are retried.",
		}),
		commitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tpkit_tporigin_commit_duration_seconds",
			Help:    "Time of one group commit, fsync included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tpkit_tporigin_commit_batch_size",
			Help:    "Origin changes per group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}),
	}
}

// collectors are the metrics kept as client_golang values, in the order
// Describe and Collect emit them.
func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.tenantConflicts, m.uidConflictsVec, m.prunedVec,
		m.commits, m.commitErrors, m.commitDuration, m.batchSize}
}

func (m *metrics) uidConflicts(partition string) prometheus.Counter {
	return m.uidConflictsVec.WithLabelValues(partition)
}

func (m *metrics) pruned(partition string) prometheus.Counter {
	return m.prunedVec.WithLabelValues(partition)
}

func (m *metrics) observeCommit(d time.Duration, n int, err error) {
	if err != nil {
		m.commitErrors.Inc()
		return
	}
	m.commits.Inc()
	m.commitDuration.Observe(d.Seconds())
	m.batchSize.Observe(float64(n))
}

var (
	entriesDesc = prometheus.NewDesc("tpkit_tporigin_entries",
		"Known origins, by partition and kind.", []string{"partition", "kind"}, nil)
	tenantsInConflictDesc = prometheus.NewDesc("tpkit_tporigin_tenants_in_conflict",
		"Regular tenants currently seen in more than one tenant partition.", nil, nil)
	pendingDesc = prometheus.NewDesc("tpkit_tporigin_pending",
		"Origin changes not yet durable in the database file.", nil, nil)
)

// Collector returns the tracker's metrics as one prometheus.Collector, for
// the program's own registry:
// tpkit_tporigin_entries{partition,kind}, tpkit_tporigin_uid_conflicts_total,
// tpkit_tporigin_tenants_in_conflict, tpkit_tporigin_tenant_conflicts_total,
// tpkit_tporigin_pruned_total, tpkit_tporigin_pending and the commit
// counters and histograms.
func (t *Tracker) Collector() prometheus.Collector { return (*collector)(t) }

type collector Tracker

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- entriesDesc
	ch <- tenantsInConflictDesc
	ch <- pendingDesc
	for _, m := range c.m.collectors() {
		m.Describe(ch)
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	t := (*Tracker)(c)
	t.mu.RLock()
	for tp, counts := range t.counts {
		for k := KindPod; k < numKinds; k++ {
			ch <- prometheus.MustNewConstMetric(entriesDesc, prometheus.GaugeValue, float64(counts[k]), t.tpNames[tp], k.String())
		}
	}
	t.mu.RUnlock()
	ch <- prometheus.MustNewConstMetric(tenantsInConflictDesc, prometheus.GaugeValue, float64(t.m.tenantsInConflict.Load()))
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(t.Pending()))
	for _, m := range t.m.collectors() {
		m.Collect(ch)
	}
}

package tporigink8s

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

var (
	entriesDesc = prometheus.NewDesc("tpkit_tporigin_entries",
		"Known origins, by partition and kind.", []string{"partition", "kind"}, nil)
	tenantsInConflictDesc = prometheus.NewDesc("tpkit_tporigin_tenants_in_conflict",
		"Regular tenants currently seen in more than one tenant partition.", nil, nil)
	pendingDesc = prometheus.NewDesc("tpkit_tporigin_pending",
		"Origin changes not yet durable in the database file.", nil, nil)
	tenantConflictsDesc = prometheus.NewDesc("tpkit_tporigin_tenant_conflicts_total",
		"Times a regular tenant was found in more than one tenant partition (or in another than its static one).", nil, nil)
	uidConflictsDesc = prometheus.NewDesc("tpkit_tporigin_uid_conflicts_total",
		"UIDs reported by a tenant partition other than their recorded origin, by the reporting partition; the first origin is kept.", []string{"partition"}, nil)
	prunedDesc = prometheus.NewDesc("tpkit_tporigin_pruned_total",
		"Origins removed after a full sync because the partition no longer reports the object, or at start because the partition is no longer configured.", []string{"partition"}, nil)
	commitsDesc = prometheus.NewDesc("tpkit_tporigin_commits_total",
		"Durable group commits of origin changes to the database file.", nil, nil)
	commitErrorsDesc = prometheus.NewDesc("tpkit_tporigin_commit_errors_total",
		"Group commits that failed; their changes stay queued and are retried.", nil, nil)
	commitDurationDesc = prometheus.NewDesc("tpkit_tporigin_commit_duration_seconds",
		"Time of one group commit, fsync included.", nil, nil)
	batchSizeDesc = prometheus.NewDesc("tpkit_tporigin_commit_batch_size",
		"Origin changes per group commit.", nil, nil)
)

// Collector returns t's metrics as one prometheus.Collector, for the
// program's own registry (nothing is registered globally):
// tpkit_tporigin_entries{partition,kind}, tpkit_tporigin_uid_conflicts_total,
// tpkit_tporigin_tenants_in_conflict, tpkit_tporigin_tenant_conflicts_total,
// tpkit_tporigin_pruned_total, tpkit_tporigin_pending and the commit
// counters and histograms. Each scrape reads one t.Stats().
func Collector(t *tporigin.Tracker) prometheus.Collector { return collector{t} }

type collector struct{ t *tporigin.Tracker }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{entriesDesc, tenantsInConflictDesc, pendingDesc, tenantConflictsDesc,
		uidConflictsDesc, prunedDesc, commitsDesc, commitErrorsDesc, commitDurationDesc, batchSizeDesc} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.t.Stats()
	for _, e := range s.Entries {
		ch <- prometheus.MustNewConstMetric(entriesDesc, prometheus.GaugeValue, float64(e.Count), e.Partition, e.Kind.String())
	}
	ch <- prometheus.MustNewConstMetric(tenantsInConflictDesc, prometheus.GaugeValue, float64(s.TenantsInConflict))
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(tenantConflictsDesc, prometheus.CounterValue, float64(s.TenantConflicts))
	perPartition(ch, uidConflictsDesc, s.UIDConflicts)
	perPartition(ch, prunedDesc, s.Pruned)
	ch <- prometheus.MustNewConstMetric(commitsDesc, prometheus.CounterValue, float64(s.Commits))
	ch <- prometheus.MustNewConstMetric(commitErrorsDesc, prometheus.CounterValue, float64(s.CommitErrors))
	ch <- histogram(commitDurationDesc, s.CommitSeconds)
	ch <- histogram(batchSizeDesc, s.CommitBatchSize)
}

// perPartition emits one counter per partition, in name order.
func perPartition(ch chan<- prometheus.Metric, d *prometheus.Desc, counts map[string]uint64) {
	names := make([]string, 0, len(counts))
	for tp := range counts {
		names = append(names, tp)
	}
	sort.Strings(names)
	for _, tp := range names {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(counts[tp]), tp)
	}
}

func histogram(d *prometheus.Desc, h tporigin.Histogram) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Upper))
	for i, u := range h.Upper {
		buckets[u] = h.Counts[i]
	}
	return prometheus.MustNewConstHistogram(d, h.Count, h.Sum, buckets)
}

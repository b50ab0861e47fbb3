package cache

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	hits           [3]prometheus.Counter
	misses         prometheus.Counter
	stale          prometheus.Counter
	prefetches     prometheus.Counter
	chaos          prometheus.Counter
	upstreamErrors *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, s *Store) (*metrics, error) {
	hits := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tpkit_nodelocal_cache_hits_total",
		Help: "Queries answered from a fresh cache entry, by entry type (success, denial).",
	}, []string{"type"})
	m := &metrics{
		misses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tpkit_nodelocal_cache_misses_total",
			Help: "Queries not answered from a fresh cache entry.",
		}),
		stale: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tpkit_nodelocal_cache_stale_answers_total",
			Help: "Expired entries served because the upstream failed.",
		}),
		prefetches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tpkit_nodelocal_cache_prefetches_total",
			Help: "Popular entries refreshed before they expired.",
		}),
		chaos: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tpkit_nodelocal_cache_identity_queries_total",
			Help: "CHAOS id.server./hostname.bind. queries answered (the watcher's probes).",
		}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tpkit_nodelocal_upstream_errors_total",
			Help: "Upstream exchanges that failed, by route (cluster, host).",
		}, []string{"route"}),
	}
	m.hits[Success] = hits.WithLabelValues("success")
	m.hits[Denial] = hits.WithLabelValues("denial")
	if reg == nil {
		return m, nil
	}
	cs := []prometheus.Collector{hits, m.misses, m.stale, m.prefetches, m.chaos, m.upstreamErrors,
		&storeCollector{s: s}}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// storeCollector reports entry counts and evictions at scrape time.
type storeCollector struct{ s *Store }

var (
	entriesDesc = prometheus.NewDesc("tpkit_nodelocal_cache_entries",
		"Entries in the cache, by type.", []string{"type"}, nil)
	evictionsDesc = prometheus.NewDesc("tpkit_nodelocal_cache_evictions_total",
		"Entries evicted to make room, by type.", []string{"type"}, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- entriesDesc
	ch <- evictionsDesc
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	for _, k := range []Kind{Success, Denial} {
		ch <- prometheus.MustNewConstMetric(entriesDesc, prometheus.GaugeValue, float64(c.s.Len(k)), k.String())
		ch <- prometheus.MustNewConstMetric(evictionsDesc, prometheus.CounterValue, float64(c.s.Evictions(k)), k.String())
	}
}

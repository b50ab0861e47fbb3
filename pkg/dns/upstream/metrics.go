package upstream

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	hits           [3]prometheus.Counter
	misses         prometheus.Counter
	stale          prometheus.Counter
	prefetches     prometheus.Counter
	upstreamErrors *prometheus.CounterVec
}

// newMetrics makes the resolver's metrics, named prefix_..., and registers
// them on reg when it is not nil.
func newMetrics(reg prometheus.Registerer, prefix string, s *Store) (*metrics, error) {
	hits := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: prefix + "_cache_hits_total",
		Help: "Queries answered from a fresh cache entry, by entry type (success, denial).",
	}, []string{"type"})
	m := &metrics{
		misses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: prefix + "_cache_misses_total",
			Help: "Queries not answered from a fresh cache entry.",
		}),
		stale: prometheus.NewCounter(prometheus.CounterOpts{
			Name: prefix + "_cache_stale_answers_total",
			Help: "Expired entries served because the upstream failed.",
		}),
		prefetches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: prefix + "_cache_prefetches_total",
			Help: "Popular entries refreshed before they expired.",
		}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: prefix + "_upstream_errors_total",
			Help: "Upstream exchanges that failed, by route (cluster, host).",
		}, []string{"route"}),
	}
	m.hits[Success] = hits.WithLabelValues("success")
	m.hits[Denial] = hits.WithLabelValues("denial")
	if reg == nil {
		return m, nil
	}
	cs := []prometheus.Collector{hits, m.misses, m.stale, m.prefetches, m.upstreamErrors, newStoreCollector(prefix, s)}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// storeCollector reports entry counts and evictions at scrape time.
type storeCollector struct {
	s                *Store
	entries, evicted *prometheus.Desc
}

func newStoreCollector(prefix string, s *Store) *storeCollector {
	return &storeCollector{
		s:       s,
		entries: prometheus.NewDesc(prefix+"_cache_entries", "Entries in the cache, by type.", []string{"type"}, nil),
		evicted: prometheus.NewDesc(prefix+"_cache_evictions_total", "Entries evicted to make room, by type.", []string{"type"}, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.entries
	ch <- c.evicted
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	for _, k := range []Kind{Success, Denial} {
		ch <- prometheus.MustNewConstMetric(c.entries, prometheus.GaugeValue, float64(c.s.Len(k)), k.String())
		ch <- prometheus.MustNewConstMetric(c.evicted, prometheus.CounterValue, float64(c.s.Evictions(k)), k.String())
	}
}

package kubeletcache

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
)

type metrics struct {
	stale *prometheus.CounterVec
}

func newMetrics(resource string) *metrics {
	return &metrics{
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "tpkit_kubeletcache_served_stale_total",
			Help:        "Reads answered with the last known object because its tenant partition could not be reached.",
			ConstLabels: prometheus.Labels{"resource": resource},
		}, []string{"partition"}),
	}
}

func (m *metrics) servedStale(tp string) prometheus.Counter { return m.stale.WithLabelValues(tp) }

var (
	objectsDesc = prometheus.NewDesc("tpkit_kubeletcache_objects",
		"Objects referenced by registered pods, by partition.", []string{"resource", "partition"}, nil)
	reflectorsDesc = prometheus.NewDesc("tpkit_kubeletcache_reflectors",
		"Running per-object reflectors (Watch strategy), by partition.", []string{"resource", "partition"}, nil)
	staleDesc = prometheus.NewDesc("tpkit_kubeletcache_stale_objects",
		"Objects whose tenant partition could not be reached at the last attempt, by partition.", []string{"resource", "partition"}, nil)
	maxAgeDesc = prometheus.NewDesc("tpkit_kubeletcache_max_age_seconds",
		"Age of the least recently confirmed object, by partition.", []string{"resource", "partition"}, nil)
)

// Collector returns the manager's metrics for the program's own registry:
// tpkit_kubeletcache_objects, _reflectors, _stale_objects, _max_age_seconds
// and _served_stale_total, labelled by resource and partition.
func (m *manager[T]) Collector() prometheus.Collector { return &collector[T]{m} }

type collector[T runtime.Object] struct{ m *manager[T] }

func (c *collector[T]) Describe(ch chan<- *prometheus.Desc) {
	ch <- objectsDesc
	ch <- reflectorsDesc
	ch <- staleDesc
	ch <- maxAgeDesc
	c.m.m.stale.Describe(ch)
}

func (c *collector[T]) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	type agg struct {
		objects, reflectors, stale int
		maxAge                     float64
	}
	per := map[string]*agg{}
	now := m.o.Now()
	m.mu.RLock()
	for _, it := range m.items {
		a := per[it.key.Partition]
		if a == nil {
			a = &agg{}
			per[it.key.Partition] = a
		}
		it.mu.Lock()
		f := m.s.freshness(it, now)
		if it.watch.running {
			a.reflectors++
		}
		it.mu.Unlock()
		a.objects++
		if f.Stale {
			a.stale++
		}
		if !f.AsOf.IsZero() && f.Age.Seconds() > a.maxAge {
			a.maxAge = f.Age.Seconds()
		}
	}
	m.mu.RUnlock()
	res := m.k.api.Name
	for tp, a := range per {
		ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(a.objects), res, tp)
		ch <- prometheus.MustNewConstMetric(reflectorsDesc, prometheus.GaugeValue, float64(a.reflectors), res, tp)
		ch <- prometheus.MustNewConstMetric(staleDesc, prometheus.GaugeValue, float64(a.stale), res, tp)
		ch <- prometheus.MustNewConstMetric(maxAgeDesc, prometheus.GaugeValue, a.maxAge, res, tp)
	}
	m.m.stale.Collect(ch)
}

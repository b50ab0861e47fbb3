package partition

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector returns a prometheus.Collector for the Set's per-TP health:
// tpkit_partition_synced, tpkit_partition_reachable,
// tpkit_partition_last_event_timestamp_seconds,
// tpkit_partition_request_errors_total, each labelled by partition, and
// tpkit_partition_transitions_total, labelled by partition and the state
// entered (to: synced, stale or recovered). Register it on the program's own
// registry.
func (s *Set) Collector() prometheus.Collector { return &collector{s: s} }

var (
	syncedDesc = prometheus.NewDesc("tpkit_partition_synced",
		"1 when every consumer of the tenant partition has listed it once.", []string{"partition"}, nil)
	reachableDesc = prometheus.NewDesc("tpkit_partition_reachable",
		"1 when the last request to the tenant partition got an answer.", []string{"partition"}, nil)
	lastEventDesc = prometheus.NewDesc("tpkit_partition_last_event_timestamp_seconds",
		"Unix time when data last arrived from the tenant partition.", []string{"partition"}, nil)
	errorsDesc = prometheus.NewDesc("tpkit_partition_request_errors_total",
		"Requests to the tenant partition that failed or got a server-side error.", []string{"partition"}, nil)
	transitionsDesc = prometheus.NewDesc("tpkit_partition_transitions_total",
		"Changes of the tenant partition's state, by the state entered: synced (the first time), stale (synced, then unreachable) or recovered (answering again).",
		[]string{"partition", "to"}, nil)
)

type collector struct{ s *Set }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- syncedDesc
	ch <- reachableDesc
	ch <- lastEventDesc
	ch <- errorsDesc
	ch <- transitionsDesc
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.s.Statuses() {
		ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, b2f(st.Synced), st.Name)
		ch <- prometheus.MustNewConstMetric(reachableDesc, prometheus.GaugeValue, b2f(st.Reachable), st.Name)
		var ts float64
		if !st.LastEvent.IsZero() {
			ts = float64(st.LastEvent.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(lastEventDesc, prometheus.GaugeValue, ts, st.Name)
		ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(st.Errors), st.Name)
		for _, t := range []struct {
			to string
			n  uint64
		}{{"synced", st.Transitions.Synced}, {"stale", st.Transitions.Stale}, {"recovered", st.Transitions.Recovered}} {
			ch <- prometheus.MustNewConstMetric(transitionsDesc, prometheus.CounterValue, float64(t.n), st.Name, t.to)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

package partition

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector returns a prometheus.Collector for the Set's per-TP health:
// tpkit_partition_synced, tpkit_partition_reachable,
// tpkit_partition_last_event_timestamp_seconds and
// tpkit_partition_request_errors_total, each labelled by partition.
// Register it on the program's own registry.
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
)

type collector struct{ s *Set }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- syncedDesc
	ch <- reachableDesc
	ch <- lastEventDesc
	ch <- errorsDesc
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
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

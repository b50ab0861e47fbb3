package source

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	syncedDesc = prometheus.NewDesc("tpkit_dns_partition_synced",
		"1 when partition-dns's feeds of the tenant partition have all listed once.", []string{"partition"}, nil)
	staleDesc = prometheus.NewDesc("tpkit_dns_partition_stale",
		"1 when the tenant partition is unreachable and its last known records are being served.", []string{"partition"}, nil)
	objectsDesc = prometheus.NewDesc("tpkit_dns_partition_objects",
		"Objects of the tenant partition in the DNS index, by kind (services, pod_ips).", []string{"partition", "kind"}, nil)
	conflictsDesc = prometheus.NewDesc("tpkit_dns_tenant_conflicts",
		"Regular tenants found in more than one tenant partition; the lowest-indexed partition answers for them.", nil, nil)
	conflictDesc = prometheus.NewDesc("tpkit_dns_tenant_conflict",
		"1 for each regular tenant found in more than one tenant partition.", []string{"tenant"}, nil)
)

// Collector exports the partitions' DNS state and the index's contents.
func (s *Source) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Source }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- syncedDesc
	ch <- staleDesc
	ch <- objectsDesc
	ch <- conflictsDesc
	ch <- conflictDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.s.b.Current()
	for i, st := range c.s.States() {
		ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, b2f(st.Synced), st.Name)
		ch <- prometheus.MustNewConstMetric(staleDesc, prometheus.GaugeValue, b2f(st.Stale), st.Name)
		svcs, pods := snap.Counts(i)
		ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(svcs), st.Name, "services")
		ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(pods), st.Name, "pod_ips")
	}
	ch <- prometheus.MustNewConstMetric(conflictsDesc, prometheus.GaugeValue, float64(len(snap.Conflicts)))
	for _, t := range snap.Conflicts {
		ch <- prometheus.MustNewConstMetric(conflictDesc, prometheus.GaugeValue, 1, t)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

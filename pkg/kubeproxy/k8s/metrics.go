package k8s

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
)

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

var (
	partitionSyncedDesc = prometheus.NewDesc("tpkit_kubeproxy_partition_synced",
		"1 when the tenant partition has reported its services and endpoints synced, else 0.", []string{"partition"}, nil)
	partitionServicesDesc = prometheus.NewDesc("tpkit_kubeproxy_services",
		"Services of the tenant partition that the view holds.", []string{"partition"}, nil)
	partitionEndpointsDesc = prometheus.NewDesc("tpkit_kubeproxy_endpoints",
		"Endpoints objects of the tenant partition that feed a service.", []string{"partition"}, nil)
)

// RegisterPartitionMetrics registers v's per-TP figures
// (kubeproxy.ViewStats.Partitions) on reg, labelled partition=name(id):
// tpkit_kubeproxy_partition_synced, tpkit_kubeproxy_services and
// tpkit_kubeproxy_endpoints. Arktos's patched kube-proxy publishes the same
// series (and tpkit_kubeproxy_partition_sync_timed_out) from its own
// collector.
func RegisterPartitionMetrics(reg prometheus.Registerer, v *kubeproxy.View, name func(tenantPartitionID int) string) error {
	return reg.Register(partitionCollector{v: v, name: name})
}

type partitionCollector struct {
	v    *kubeproxy.View
	name func(int) string
}

func (partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- partitionSyncedDesc
	ch <- partitionServicesDesc
	ch <- partitionEndpointsDesc
}

func (c partitionCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.v.Stats().Partitions {
		name := c.name(p.TenantPartitionID)
		synced := 0.0
		if p.ServicesSynced && p.EndpointsSynced {
			synced = 1
		}
		ch <- prometheus.MustNewConstMetric(partitionSyncedDesc, prometheus.GaugeValue, synced, name)
		ch <- prometheus.MustNewConstMetric(partitionServicesDesc, prometheus.GaugeValue, float64(p.Services), name)
		ch <- prometheus.MustNewConstMetric(partitionEndpointsDesc, prometheus.GaugeValue, float64(p.Endpoints), name)
	}
}

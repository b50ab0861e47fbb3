package k8s_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/kubeproxy/iptables"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/pkg/kubeproxy/k8s"
	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// Example wires a node proxy in a tpkit program: every TP's informers feed
// the view through the adapter's Source, and a bounded runner applies the
// changes to the iptables reference dataplane, with klog and Prometheus.
func Example() {
	run := func(ctx context.Context, kubeconfigs []string, reg prometheus.Registerer) error {
		set, err := partition.New(partition.Options{KubeconfigPaths: kubeconfigs})
		if err != nil {
			return err
		}
		names := kubeproxyk8s.PartitionsOf(set) // names[i] is tenantPartitionId i
		view := kubeproxy.NewView(names.IDs(), kubeproxy.Options{Logf: kubeproxyk8s.Logf})
		src, err := kubeproxyk8s.NewSource(set, []kubeproxy.ServiceHandler{view}, []kubeproxy.EndpointsHandler{view},
			kubeproxyk8s.SourceOptions{SyncTimeout: partition.DefaultSyncTimeout})
		if err != nil {
			return err
		}
		if err := kubeproxyk8s.RegisterViewMetrics(reg, view); err != nil {
			return err
		}
		m, err := kubeproxyk8s.NewMetrics(reg)
		if err != nil {
			return err
		}
		proxier, err := iptables.New(iptables.Options{})
		if err != nil {
			return err
		}
		set.Start(ctx)
		go src.Run(ctx)
		kubeproxy.NewRunner(view, proxier.Sync, kubeproxy.RunnerOptions{Logf: kubeproxyk8s.Logf, OnSync: m.Observe}).Run(ctx)
		return nil
	}
	fmt.Println(run != nil)
	// Output: true
}

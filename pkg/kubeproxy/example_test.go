package kubeproxy_test

import (
	"context"
	"fmt"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/kubeproxy/iptables"
	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// Example wires a node proxy: every TP's informers feed the view, and a
// bounded runner applies the changes to the iptables reference dataplane.
func Example() {
	run := func(ctx context.Context, kubeconfigs []string) error {
		set, err := partition.New(partition.Options{KubeconfigPaths: kubeconfigs})
		if err != nil {
			return err
		}
		names := make([]string, 0, set.Len())
		for _, p := range set.Partitions() {
			names = append(names, p.Name)
		}
		view := kubeproxy.NewView(names, kubeproxy.Options{})
		src, err := kubeproxy.NewSource(set, []kubeproxy.ServiceHandler{view},
			[]kubeproxy.EndpointsHandler{view}, []kubeproxy.EndpointSliceHandler{view},
			kubeproxy.SourceOptions{SyncTimeout: partition.DefaultSyncTimeout})
		if err != nil {
			return err
		}
		proxier, err := iptables.New(iptables.Options{})
		if err != nil {
			return err
		}
		set.Start(ctx)
		go src.Run(ctx)
		kubeproxy.NewRunner(view, proxier.Sync, kubeproxy.RunnerOptions{}).Run(ctx)
		return nil
	}
	fmt.Println(run != nil)
	// Output: true
}

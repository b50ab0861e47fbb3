package k8s

import (
	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// PartitionsOf returns the names of set's TPs by tenantPartitionId: a TP's
// id is its Index, its position in --tenant-server-kubeconfig, as in
// Arktos's kube-proxy (see kubeproxy.Partitions).
func PartitionsOf(set *partition.Set) kubeproxy.Partitions {
	out := make(kubeproxy.Partitions, set.Len())
	for _, p := range set.Partitions() {
		if p.Index >= len(out) {
			grown := make(kubeproxy.Partitions, p.Index+1)
			copy(grown, out)
			out = grown
		}
		out[p.Index] = p.Name
	}
	return out
}

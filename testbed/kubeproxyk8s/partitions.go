package kubeproxyk8s

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
		out[p.Index] = p.Name // Index is the position, 0..Len-1
	}
	return out
}

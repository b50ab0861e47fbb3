package k8s

import (
	"strconv"

	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// Partitions names the TPs by tenantPartitionId: Partitions[i] is the name
// of TP i. tpkit names a TP ("tp1", from its kubeconfig's context or file,
// or --tenant-partition-names); the core, like Arktos, numbers it by its
// position in --tenant-server-kubeconfig, from 0. So the core's key
// "system_0/kube-system/kube-dns:dns" is TP "tp1"'s kube-dns when tp1 is
// the first kubeconfig.
type Partitions []string

// PartitionsOf returns the names of set's TPs by id (partition.Partition's
// Index).
func PartitionsOf(set *partition.Set) Partitions {
	out := make(Partitions, set.Len())
	for _, p := range set.Partitions() {
		if p.Index >= len(out) {
			grown := make(Partitions, p.Index+1)
			copy(grown, out)
			out = grown
		}
		out[p.Index] = p.Name
	}
	return out
}

// IDs returns every tenantPartitionId, for kubeproxy.NewView.
func (p Partitions) IDs() []int {
	out := make([]int, len(p))
	for i := range p {
		out[i] = i
	}
	return out
}

// ID returns the tenantPartitionId of the TP called name.
func (p Partitions) ID(name string) (int, bool) {
	for i, n := range p {
		if n == name {
			return i, true
		}
	}
	return 0, false
}

// Name returns the name of TP id, or "#<id>" for an id not in the list.
func (p Partitions) Name(id int) string {
	if id >= 0 && id < len(p) {
		return p[id]
	}
	return "#" + strconv.Itoa(id)
}

/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kubeproxy

import "strconv"

// Partitions names the TPs by tenantPartitionId: Partitions[i] is the name
// of TP i. This is how TP names map to Arktos's ids: tpkit names a TP
// ("tp1", from its kubeconfig's context or file, or --tenant-partition-names,
// as pkg/tporigin's tracker records it), Arktos's kube-proxy numbers it by
// its position in --tenant-server-kubeconfig, from 0 (client i is TP i), and
// so does this package. With kubeconfigs tp1, tp2, the key
// "system_0/kube-system/kube-dns:dns" is tp1's kube-dns.
type Partitions []string

// IDs returns every tenantPartitionId, 0 to len(p)-1, for NewView.
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

// NamedTenantPartitions says where regular tenants live by TP name, as
// pkg/tporigin's tracker does (PartitionOfTenant).
type NamedTenantPartitions interface {
	PartitionOfTenant(tenant string) (partition string, ok bool)
}

// Tenants turns t's answers (TP names) into the tenantPartitionIds the view
// compares with: set it as Options.Tenants. A name not in p is no answer.
func (p Partitions) Tenants(t NamedTenantPartitions) TenantPartitions {
	return namedTenants{t, p}
}

type namedTenants struct {
	t     NamedTenantPartitions
	names Partitions
}

func (n namedTenants) PartitionOfTenant(tenant string) (int, bool) {
	name, ok := n.t.PartitionOfTenant(tenant)
	if !ok {
		return 0, false
	}
	return n.names.ID(name)
}

package k8s

import (
	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

// TenantsByName is where regular tenants live, by TP name:
// *tporigin.Tracker's PartitionOfTenant.
type TenantsByName interface {
	PartitionOfTenant(tenant string) (partition string, ok bool)
}

// Tenants turns t's answers (TP names) into the tenantPartitionIds the view
// compares with: set it as kubeproxy.Options.Tenants. A TP name not in
// names is an unknown answer.
func Tenants(t TenantsByName, names Partitions) kubeproxy.TenantPartitions {
	return tenants{t, names}
}

type tenants struct {
	t     TenantsByName
	names Partitions
}

func (t tenants) PartitionOfTenant(tenant string) (int, bool) {
	name, ok := t.t.PartitionOfTenant(tenant)
	if !ok {
		return 0, false
	}
	return t.names.ID(name)
}

// FollowTracker makes v follow t's answers on where regular tenants live:
// build v with Options{Tenants: Tenants(t, names)}, then call FollowTracker
// so that every TenantPartitionChanged change re-evaluates that tenant's
// services at the next Apply. Call the returned function to stop following.
func FollowTracker(v *kubeproxy.View, t *tporigin.Tracker) (stop func()) {
	return t.Subscribe(func(c tporigin.Change) {
		if c.Op == tporigin.TenantPartitionChanged {
			v.TenantMoved(c.Tenant)
		}
	})
}

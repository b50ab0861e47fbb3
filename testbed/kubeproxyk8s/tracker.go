package kubeproxyk8s

import (
	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

// FollowTracker makes v follow t's answers on where regular tenants live:
// build v with Options{Tenants: names.Tenants(t)}, then call FollowTracker
// so that every TenantPartitionChanged change re-evaluates that tenant's
// services at the next Apply. Call the returned function to stop following.
func FollowTracker(v *kubeproxy.View, t *tporigin.Tracker) (stop func()) {
	return t.Subscribe(func(c tporigin.Change) {
		if c.Op == tporigin.TenantPartitionChanged {
			v.TenantMoved(c.Tenant)
		}
	})
}

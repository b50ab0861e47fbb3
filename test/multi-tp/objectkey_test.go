package multitp

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
)

// podConfigMap reads a pod's configmap the way Arktos's kubelet does with
// tpkit's series (arktos/patches): ClientChooser.ObjectKey names the pod's
// TP and the object's tenant, and the GET goes to that TP on the tenant's
// path (the short path for the system tenant).
func podConfigMap(ctx context.Context, t *testing.T, set *partition.Set, chooser *tporigin.ClientChooser, tenant, ns, name, podUID string) (*corev1.ConfigMap, error) {
	t.Helper()
	key, err := chooser.ObjectKey(tenant, ns, name, podUID)
	if err != nil {
		return nil, err
	}
	p := set.Partitions()[key.Client]
	if p.Name != key.Partition {
		t.Fatalf("ObjectKey(%s/%s/%s, %s): client %d is %s, the key says %s", tenant, ns, name, podUID, key.Client, p.Name, key.Partition)
	}
	if !tenancy.IsSystem(key.Tenant) {
		ctx = tenancyk8s.WithTenant(ctx, key.Tenant)
	}
	return partitiontest.Clientset(t, p).CoreV1().ConfigMaps(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
}

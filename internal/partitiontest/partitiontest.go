package partitiontest

import (
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// Clientset returns a clientset over p's tenant-preserving config and HTTP
// client.
func Clientset(t testing.TB, p *partition.Partition) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfigAndClient(p.Config, p.HTTPClient)
	if err != nil {
		t.Fatalf("clientset of tenant partition %s: %v", p.Name, err)
	}
	return cs
}

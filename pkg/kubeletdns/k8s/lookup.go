package k8s

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tpkit-dev/tpkit/pkg/kubeletdns"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
)

// ClientLookup is a kubeletdns.ServiceIPLookup that GETs the service from
// its partition's API server, on the tenant's Arktos path. A service that
// comes back carrying another tenant is an error, never another tenant's
// server.
type ClientLookup struct {
	// Client returns the clientset of a partition, built with
	// tenancyk8s.WrapConfig (PartitionClients' are).
	Client func(partition string) (kubernetes.Interface, bool)
	// Timeout bounds one lookup; zero means 10 seconds.
	Timeout time.Duration
}

var _ kubeletdns.ServiceIPLookup = (*ClientLookup)(nil)

// PartitionClients adapts the TP set for ClientLookup.Client: a
// tenant-preserving clientset per partition, over the partition's own
// config and HTTP client.
func PartitionClients(set *partition.Set) (func(partition string) (kubernetes.Interface, bool), error) {
	clients := make(map[string]kubernetes.Interface, set.Len())
	for _, p := range set.Partitions() {
		cs, err := kubernetes.NewForConfigAndClient(p.Config, p.HTTPClient)
		if err != nil {
			return nil, fmt.Errorf("tenant partition %s: %w", p.Name, err)
		}
		clients[p.Name] = cs
	}
	return func(name string) (kubernetes.Interface, bool) {
		cs, ok := clients[name]
		return cs, ok
	}, nil
}

// ServiceIPs implements kubeletdns.ServiceIPLookup.
func (l *ClientLookup) ServiceIPs(ctx context.Context, partition, tenant, namespace, name string) ([]string, bool, error) {
	client, ok := l.Client(partition)
	if !ok {
		return nil, false, fmt.Errorf("unknown tenant partition %q", partition)
	}
	timeout := l.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(tenancyk8s.WithTenant(ctx, tenant), timeout)
	defer cancel()
	svc, err := client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	// Arktos serves the tenant's object on the tenant path; anything else
	// would be another tenant's service of the same name.
	if got := tenancy.TenantOf(svc); got != tenant && !(tenancy.IsSystem(got) && tenancy.IsSystem(tenant)) {
		return nil, false, fmt.Errorf("asked for tenant %q's service %s/%s, got tenant %q's", tenant, namespace, name, got)
	}
	return ServiceClusterIPs(svc), true, nil
}

// ServiceClusterIPs returns a service's cluster IPs (spec.clusterIPs, or
// spec.clusterIP for objects that predate dual-stack), without "None".
func ServiceClusterIPs(svc *v1.Service) []string {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		if ip != "" && ip != v1.ClusterIPNone {
			out = append(out, ip)
		}
	}
	return out
}

package kubeletdns

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
)

const (
	// NetworkLabel is Arktos's pod label naming the pod's network.
	NetworkLabel = "arktos.futurewei.com/network"
	// DefaultNetwork is the network of a pod without NetworkLabel.
	DefaultNetwork = "default"
	// DNSServiceNamespace is where Arktos creates a tenant's DNS services.
	DNSServiceNamespace = "kube-system"
	// dnsServicePrefix + network is the name of a network's DNS service.
	dnsServicePrefix = "kube-dns-"
)

// NetworkOf returns the pod's Arktos network: its NetworkLabel, or
// DefaultNetwork.
func NetworkOf(pod *v1.Pod) string {
	if n := pod.Labels[NetworkLabel]; n != "" {
		return n
	}
	return DefaultNetwork
}

// DNSServiceName returns the name of the DNS service Arktos creates for a
// network of a tenant: "kube-dns-<network>". It is an error when the result
// cannot name a service.
func DNSServiceName(network string) (string, error) {
	name := dnsServicePrefix + network
	if err := tenancy.ValidateLabel("DNS service", name); err != nil {
		return "", fmt.Errorf("network %q has no valid DNS service name: %w", clip(network), err)
	}
	return name, nil
}

// ServiceIPLookup reads the cluster IPs of one service in one tenant
// partition. found is false when the service does not exist, which is not an
// error. The configurer calls it once per pod sandbox, so an implementation
// may ask the API server directly.
type ServiceIPLookup interface {
	ServiceIPs(ctx context.Context, partition, tenant, namespace, name string) (ips []string, found bool, err error)
}

// ClientLookup is a ServiceIPLookup that GETs the service from its
// partition's API server, on the tenant's Arktos path. A service that comes
// back carrying another tenant is an error, never another tenant's server.
type ClientLookup struct {
	// Client returns the clientset of a partition, built with
	// tenancyk8s.WrapConfig (pkg/partition's Partition.Client is).
	Client func(partition string) (kubernetes.Interface, bool)
	// Timeout bounds one lookup; zero means 10 seconds.
	Timeout time.Duration
}

// PartitionClients adapts the TP set for ClientLookup.Client: each
// partition's tenant-preserving clientset.
func PartitionClients(set *partition.Set) func(partition string) (kubernetes.Interface, bool) {
	return func(name string) (kubernetes.Interface, bool) {
		p, ok := set.Get(name)
		if !ok {
			return nil, false
		}
		return p.Client, true
	}
}

// ServiceIPs implements ServiceIPLookup.
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

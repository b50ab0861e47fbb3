// Package k8s is pkg/kubeletdns's adapter for tpkit's own programs and
// tests: upstream k8s.io/api pods in, a client-go lookup of each tenant's DNS
// service, klog, and the flag forms.
//
// The core (pkg/kubeletdns) takes a plain kubeletdns.Pod and a small
// ServiceIPLookup so that an Arktos kubelet can vendor it with its own types.
// This package fills those from upstream types: PodOf reads the tenant that
// pkg/tenancy/k8s's transport keeps on a *v1.Pod (tenancy.TenantOf), the
// Arktos network label and spec.dnsConfig; ClientLookup GETs a tenant's
// kube-dns-<network> service from the pod's own TP on the tenant's path;
// New gives the core a klog logger.
//
// Invariants:
//   - PodOf copies what the core reads and nothing else; the pod is not
//     modified, and the core does not modify the slices it shares.
//   - ClientLookup never returns another tenant's service: a service that
//     comes back carrying another tenant is an error.
//   - Nothing here holds global state; the klog logger is klog's own.
//
// An Arktos build does not need this package: it fills kubeletdns.Pod from
// its own *v1.Pod (whose Tenant is a field) and reads services through its
// own listers.
package k8s

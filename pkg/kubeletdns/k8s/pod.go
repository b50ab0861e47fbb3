package k8s

import (
	v1 "k8s.io/api/core/v1"

	"github.com/tpkit-dev/tpkit/pkg/kubeletdns"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// PodOf returns what the configurer reads from pod: its tenant
// (tenancy.TenantOf: the tenant annotation the tenancy transport keeps, or
// Arktos's GetTenant, else system), namespace, name, UID, dnsPolicy,
// hostNetwork, dnsConfig and Arktos network label. The result shares
// pod's dnsConfig slices; the configurer only reads them.
func PodOf(pod *v1.Pod) kubeletdns.Pod {
	p := kubeletdns.Pod{
		Tenant:      tenancy.TenantOf(pod),
		Namespace:   pod.Namespace,
		Name:        pod.Name,
		UID:         string(pod.UID),
		DNSPolicy:   kubeletdns.DNSPolicy(pod.Spec.DNSPolicy),
		HostNetwork: pod.Spec.HostNetwork,
		Network:     pod.Labels[kubeletdns.NetworkLabel],
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		p.DNSConfig = &kubeletdns.PodDNSConfig{Nameservers: dc.Nameservers, Searches: dc.Searches}
		if len(dc.Options) > 0 {
			p.DNSConfig.Options = make([]kubeletdns.PodDNSConfigOption, len(dc.Options))
			for i, o := range dc.Options {
				p.DNSConfig.Options[i] = kubeletdns.PodDNSConfigOption(o)
			}
		}
	}
	return p
}

// NetworkOf returns the pod's Arktos network: its kubeletdns.NetworkLabel,
// or kubeletdns.DefaultNetwork.
func NetworkOf(pod *v1.Pod) string {
	return kubeletdns.Pod{Network: pod.Labels[kubeletdns.NetworkLabel]}.NetworkName()
}

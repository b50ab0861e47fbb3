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

package kubeletdns

import "github.com/tpkit-dev/tpkit/pkg/tenancy"

// Pod is what the configurer reads from a pod: the fields kubelet's DNS code
// reads, plus the tenant. It is a plain value so that any caller can fill it
// from its own pod type: Arktos's kubelet (arktos/patches) does the
// conversion from its own *v1.Pod, whose Tenant is a field.
type Pod struct {
	// Tenant is the pod's Arktos tenant; empty means the system tenant, as
	// in Arktos.
	Tenant    string
	Namespace string
	Name      string
	// UID identifies the pod to Options.PartitionOf (Arktos's types.UID is a
	// string type: pass string(pod.UID)).
	UID string

	// DNSPolicy is spec.dnsPolicy.
	DNSPolicy DNSPolicy
	// HostNetwork is spec.hostNetwork: a ClusterFirst pod on the host network
	// gets the node's resolver.
	HostNetwork bool
	// DNSConfig is spec.dnsConfig; nil when the pod has none.
	DNSConfig *PodDNSConfig

	// Network is the pod's Arktos network, the value of its NetworkLabel;
	// empty means DefaultNetwork. It names the tenant's DNS service
	// (DNSServiceName) when Options.Services is set.
	Network string
}

// DNSPolicy is a pod's spec.dnsPolicy. Its values are the API's strings, so
// a caller converts with DNSPolicy(pod.Spec.DNSPolicy).
type DNSPolicy string

// The dnsPolicy values kubelet knows. Any other value (the empty one too) is
// invalid: the pod gets ClusterFirst and an InvalidDNSPolicy warning, as
// upstream kubelet does.
const (
	// DNSClusterFirstWithHostNet: the cluster DNS even on the host network.
	DNSClusterFirstWithHostNet DNSPolicy = "ClusterFirstWithHostNet"
	// DNSClusterFirst: the cluster DNS, or the node's resolver for a pod on
	// the host network.
	DNSClusterFirst DNSPolicy = "ClusterFirst"
	// DNSDefault: the node's resolver (the host resolv.conf).
	DNSDefault DNSPolicy = "Default"
	// DNSNone: nothing but the pod's dnsConfig.
	DNSNone DNSPolicy = "None"
)

// PodDNSConfig is a pod's spec.dnsConfig: nameservers and searches appended
// to what the policy gives, options overriding it by name.
type PodDNSConfig struct {
	Nameservers []string
	Searches    []string
	Options     []PodDNSConfigOption
}

// PodDNSConfigOption is one spec.dnsConfig option. Its fields are those of
// k8s.io/api's v1.PodDNSConfigOption (upstream's and Arktos's), so a caller
// converts one with PodDNSConfigOption(o).
type PodDNSConfigOption struct {
	Name string
	// Value is nil or empty for an option without a value, written as its
	// bare name.
	Value *string
}

const (
	// NetworkLabel is Arktos's pod label naming the pod's network
	// (arktosv1.NetworkLabel); callers read it into Pod.Network.
	NetworkLabel = "arktos.futurewei.com/network"
	// DefaultNetwork is the network of a pod without NetworkLabel
	// (arktosv1.NetworkDefault).
	DefaultNetwork = "default"
)

// tenant is the pod's tenant, with empty meaning the system tenant.
func (p *Pod) tenant() string { return tenancy.NormalTenant(p.Tenant) }

// NetworkName is the pod's Arktos network, DefaultNetwork when unset.
func (p Pod) NetworkName() string {
	if p.Network == "" {
		return DefaultNetwork
	}
	return p.Network
}

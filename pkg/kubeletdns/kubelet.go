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

import "context"

// DNSConfig is a pod's resolver settings in the shape a kubelet gives the
// container runtime: the CRI's runtimeapi.DNSConfig{Servers, Searches,
// Options}, which Arktos's Kubelet.GetPodDNS (pkg/kubelet/kubelet_network.go)
// returns and the runtime writes into the sandbox's resolv.conf. Each option
// is one token, "name" or "name:value".
type DNSConfig struct {
	Servers  []string
	Searches []string
	Options  []string
}

// GetPodDNSConfig is the entry point for a kubelet's DNS code: what
// GetPodDNS forms for pod, as the runtime's DNSConfig, and the warnings the
// kubelet records as Warning events on the pod (upstream's
// DNSConfigForming, MissingClusterDNS and InvalidDNSPolicy, and
// TenantDNSService). An Arktos kubelet calls it from Kubelet.GetPodDNS with
// the pod's tenant in Pod.Tenant and copies the three lists into a
// *runtimeapi.DNSConfig.
//
// An error means the pod's sandbox must not start with a guessed resolver:
// the kubelet reports it and retries the sandbox, as it does for its own
// configurer's errors.
func (c *Configurer) GetPodDNSConfig(ctx context.Context, pod Pod) (*DNSConfig, []Warning, error) {
	d, err := c.GetPodDNS(ctx, pod)
	if err != nil {
		return nil, nil, err
	}
	return d.DNSConfig(), d.Warnings, nil
}

// DNSConfig returns d's content in the runtime's shape. The lists are d's
// own, not copies.
func (d *PodDNS) DNSConfig() *DNSConfig {
	return &DNSConfig{Servers: d.Nameservers, Searches: d.Searches, Options: d.Options}
}

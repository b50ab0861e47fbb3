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

import (
	"context"
	"fmt"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

const (
	// DNSServiceNamespace is where Arktos creates a tenant's DNS services.
	DNSServiceNamespace = "kube-system"
	// dnsServicePrefix + network is the name of a network's DNS service.
	dnsServicePrefix = "kube-dns-"
)

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
// error; a service without a usable cluster IP is found with no IPs (or only
// unparsable ones). The configurer calls it once per pod sandbox, so an
// implementation may ask the API server directly or read a per-partition
// lister; the caller supplies it: Arktos's kubelet (arktos/patches) reads its
// serviceListers, one per tenant partition.
type ServiceIPLookup interface {
	ServiceIPs(ctx context.Context, partition, tenant, namespace, name string) (ips []string, found bool, err error)
}

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

// Package kubeletdns forms the resolv.conf of a pod, as the kubelet does, with
// Arktos tenants in the search path.
//
// One Configurer holds the configuration (cluster DNS, cluster domain, host
// resolv.conf, per-tenant and per-namespace nameservers, search scope,
// limits, and optionally a lookup of the tenant's own DNS service in the
// pod's tenant partition). GetPodDNS runs small pure steps, each tested on
// its own: parse the host file, pick the policy, pick the nameservers, build
// the search path, merge the pod's dnsConfig, fit the limits, validate.
//
// It is a core: it needs only the standard library, pkg/tenancy and
// pkg/ipaddr, and only the language and standard library of Go 1.13, so an
// Arktos kubelet (built with Go 1.13.9) can vendor it. It takes a plain Pod
// (tenant, namespace, name, UID, dnsPolicy, hostNetwork, dnsConfig, Arktos
// network) and reads services through the small ServiceIPLookup interface. GetPodDNS gives the
// resolv.conf content (Format writes it); GetPodDNSConfig gives the same as
// the CRI's DNSConfig{Servers, Searches, Options}, which a kubelet's
// GetPodDNS returns (example_arktos_test.go plugs it into a stand-in of
// Arktos's call site). The caller supplies the rest: Arktos's kubelet
// (arktos/patches) converts its *v1.Pod into a Pod, looks services up in its
// per-partition listers and logs through klog.
//
// System-tenant pods get exactly upstream kubelet's result: dnsPolicy
// ClusterFirst, ClusterFirstWithHostNet, Default and None; host-network pods
// falling back to Default; no cluster DNS meaning a warning and Default;
// dnsConfig nameservers and searches appended without duplicates and options
// overridden by name; at most 3 nameservers, 32 search domains and 2048
// characters (6 and 256 with LegacyLimits), and no domain over 253
// characters. Tenant pods search
// "<ns>.<tenant>.svc.<zone> <tenant>.svc.<zone> svc.<zone> <zone>" then the
// host's domains (only the first two with ScopeTenant), with ndots:6.
//
// Where tpkit is stricter than upstream, the output is still what upstream
// would write for every input upstream handles well: a pod without a valid
// namespace, or a host or dnsConfig entry that would reach the file but
// cannot be written to it (a nameserver that is not an IP address, a search
// domain with a blank or '#'), is an error instead of a broken file; merged
// options keep a stable order (upstream's order is random).
//
// Invariants:
//   - GetPodDNS returns a ResolvConf that passes Validate and fits the
//     limits, or an error; Format writes only what Validate accepts. No
//     input can put a newline, blank or comment into a resolv.conf line.
//   - A tenant or namespace that is not a DNS-1123 label is an error.
//   - Nothing is recorded as an event here: trimming and fallbacks come
//     back as Warnings, with upstream's reasons and messages, for the
//     caller to record (and go to Options.Logger's debug level).
//   - A Configurer is immutable after New and safe for concurrent use. The
//     host file is read on every call, as upstream does, so edits apply to
//     the next pod.
package kubeletdns

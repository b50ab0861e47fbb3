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

// Package kubeproxy is the multi-TP service and endpoint view for node
// proxies, in the shape of Arktos's kube-proxy.
//
// A node's kube-proxy in Arktos scale-out watches Services and Endpoints in
// every tenant partition (TP). The system tenant exists in every TP, so
// system/kube-system/kube-dns can exist in TP 0 and in TP 1, each with its
// own endpoints. This package keeps them apart:
//
//   - ServiceHandler and EndpointsHandler are Arktos's handler interfaces
//     (pkg/proxy/config/config.go): the TP comes last as the int
//     tenantPartitionId, the TP's position in --tenant-server-kubeconfig,
//     and synced is reported per TP. They take the core's plain records
//     (Service, Endpoints), which an Arktos proxier builds from its
//     *v1.Service and *v1.Endpoints in a few lines; testbed/kubeproxyk8s builds
//     them from upstream types, EndpointSlices included.
//   - View implements both: the endpoint filter. It keeps the current state
//     per TP and records which services changed, as Arktos's change
//     trackers do.
//   - Snapshot is what a proxier reads: service port → ready endpoints of
//     the same TP. View.Apply brings a Snapshot up to date with only the
//     services that changed; View.Snapshot builds a complete one. The
//     dataplane is Arktos's own iptables or ipvs proxier, patched to sync
//     from a View (arktos/patches): it calls Apply in its sync, at its own
//     bounded rate, once View.Synced.
//   - Partitions maps TP names (tpkit's "tp1", pkg/tporigin's answers) to
//     tenantPartitionIds, the position in --tenant-server-kubeconfig.
//
// It is a core: it needs only the standard library, pkg/tenancy and
// pkg/ipaddr (addresses are ipaddr.Addr, not net/netip's), uses only the
// language and standard library of Go 1.13, which Arktos builds with
// (test/vendorable checks both), and has no client-go, k8s.io/api, klog or
// Prometheus.
// Logging goes through Options.Logger (pkg/corelog), counters are values
// (View.Stats), which the patched kube-proxy publishes on its /metrics;
// testbed/kubeproxyk8s runs the view in process for tpkit's harnesses
// (informers, conversion of API objects).
//
// Invariants:
//   - Every service port is identified by ServicePortName, whose String is
//     Arktos's "%s_%d/%s/%s:%s": "<tenant>_<tenantPartitionId>/<namespace>/
//     <name>:<port>".
//   - An endpoints record feeds only the service of its own TP, tenant and
//     namespace. Nothing joins records across TPs.
//   - A regular tenant's services are served only from the TP the tenant
//     lives in, when a TenantPartitions oracle knows it; copies seen in
//     other TPs are held back, not served.
//   - View.Synced is true only after every TP reported services and
//     endpoints synced (Arktos's proxier starts after the first).
//   - A TP that is unreachable keeps its last state: the view changes only on
//     events. RemovePartition (or SetPartitions) deletes a TP's services.
//   - Bad input (unparsable IPs, invalid tenants, ports out of range) is
//     skipped and counted, never a panic.
//   - Nothing here holds global state or starts goroutines.
package kubeproxy

// Package iptables is tpkit's reference dataplane for pkg/kubeproxy: it
// renders a kubeproxy.Snapshot into iptables NAT rules that send traffic for
// a service's cluster IP to that service's own endpoints, and no one else's.
//
// The rule layout follows upstream kube-proxy's iptables mode, with tpkit's
// own chain names so it never touches a real kube-proxy's chains:
//
//	nat    OUTPUT, PREROUTING -> TPKIT-SERVICES
//	nat    TPKIT-SERVICES: one rule per cluster IP and port -> TPKIT-SVC-<hash>
//	nat    TPKIT-SVC-<hash>: random choice among endpoints -> TPKIT-SEP-<hash>
//	nat    TPKIT-SEP-<hash>: DNAT to the endpoint
//	filter OUTPUT, FORWARD -> TPKIT-SERVICES: REJECT for ports without endpoints
//
// The hashes are taken over the ServicePortName string, which carries the
// TP as Arktos numbers it ("system_0/kube-system/kube-dns:dns"), and the
// protocol in lower case (and the endpoint for TPKIT-SEP), exactly as
// Arktos's kube-proxy hashes KUBE-SVC-/KUBE-SEP-: the same service name in
// two TPs has two chains, and a chain's hash is the one Arktos gives the
// same port.
//
// It imports only the standard library, go-iptables and the kubeproxy core
// (no client-go, k8s.io/api, klog or Prometheus), so a build that vendors
// the core can take it along.
//
// Invariants:
//   - Bulk writes go through one iptables-restore --noflush call per sync, so
//     a sync is applied whole or not at all; chain and jump management goes
//     through go-iptables.
//   - A partial sync rewrites only the chains of the services it was told
//     changed, and adds or deletes only their rules in TPKIT-SERVICES;
//     Result counts what was written.
//   - A full sync (the first, and after any failure) rewrites everything and
//     deletes TPKIT-SVC-/TPKIT-SEP- chains left from earlier runs, so a TP
//     removed from the configuration leaves no rules behind.
//   - The Proxier's memory of what is installed advances only when
//     iptables-restore succeeded.
//
// Limits: IPv4 or IPv6 per Proxier (one Renderer.Family), cluster IPs only
// (no NodePort, external IPs, session affinity or masquerading). TPs are
// expected to allocate cluster IPs from disjoint ranges; if two TPs' service
// ports claim the same cluster IP and port, both dispatch rules are
// installed and the first one in TPKIT-SERVICES takes the traffic.
package iptables

// Package kubednsconfig applies each tenant partition's kube-dns ConfigMap
// (kube-system/kube-dns in the TP's system tenant) to the names outside the
// cluster zones that the TP's pods ask partition-dns for, as kube-dns does
// with its own ConfigMap in one cluster:
//
//   - stubDomains, a JSON map of a domain to its nameservers
//     ({"acme.local": ["10.0.0.9"]}): names under the domain go to them;
//   - upstreamNameservers, a JSON list of at most three nameservers: every
//     other name goes to them instead of partition-dns's own --upstream.
//
// A nameserver is an IP address with an optional port ("10.0.0.9:5353",
// "[fd00::9]:53"). federations is refused by name: its names,
// <svc>.<ns>.<federation>.svc.<zone>, have the shape Arktos gives a tenant's
// names. Other keys are ignored, as kube-dns ignores them.
//
// Parse reads a ConfigMap's data; Forwarders is partition-dns's forwarder,
// which asks the upstreams of the asking pod's TP (a querier that is no pod
// counts as one of the system partition, as for system names).
//
// Invariants:
//   - A ConfigMap that does not parse changes nothing: its TP keeps the last
//     configuration that did, and the error is logged and counted.
//   - A TP without a ConfigMap (or whose ConfigMap was deleted) gets the
//     default forwarder, partition-dns's --upstream.
//   - Each configuration has its own cache, so a change is never answered
//     from what the previous one cached.
package kubednsconfig

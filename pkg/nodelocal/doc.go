// Package nodelocal runs tpkit's NodeLocal DNS cache and its HA switch, the
// two modes `partition-dns node-cache` and `partition-dns node-cache-watch`
// (the KEP "NodeLocal DNSCache to beta").
//
// RunCache is the cache: it puts the local IPs (169.254.20.10 and the kube-dns
// service IP) on the nodelocaldns dummy interface (package netif), answers DNS
// on them from a cache (package cache) that forwards the cluster zones to the
// node-local-upstream service over TCP and the rest to the host's resolvers,
// and, unless --setup-iptables=false, keeps the iptables rule set (package
// rules) in place every --sync-interval.
//
// RunWatch is the switch (package watch): a separate process that probes the
// cache and removes the NOTRACK rules for the kube-dns service IP when the
// cache stops answering, so kube-proxy's DNAT sends that traffic to the
// kube-dns endpoints, and restores them when it answers again.
//
// A graceful stop of the cache (SIGTERM) loses no query: the cache first
// makes the watcher's probe fail while it keeps answering (--drain-duration),
// so the watcher moves the kube-dns traffic to the endpoints before the
// cache's sockets close; a cache that owns its rules removes them first
// instead. A crash (kill -9, OOM) loses the queries of the detection window,
// about FailureThreshold x Interval.
//
// Invariants: each Run function parses only its own arguments, owns its
// Prometheus registry, and returns when ctx ends, after tearing down what it
// set up unless --skip-teardown. With the watcher deployed, the watcher is the
// only writer of the rules (the cache runs with --setup-iptables=false), so
// the two never fight over the switch.
package nodelocal

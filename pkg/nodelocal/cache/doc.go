// Package cache is the NodeLocal DNS cache's dns.Handler: pods on the node
// ask it, and it answers from pkg/dns/upstream's resolver (the cache, the
// routes to the node-local-upstream service and the host's resolvers,
// prefetch, serve-stale, the pods' addresses as EDNS Client Subnet).
//
// What is its own: a hit is written by copying the entry's packed answer
// and patching the ID, flags, question spelling and TTLs; UDP answers are
// truncated to what the client takes; and CHAOS TXT id.server. and
// hostname.bind. are answered locally with the cache's identity: the HA
// watcher's probe, which must test the cache, not its upstream (REFUSED
// while draining).
//
// Invariants:
//   - The answer always carries the client's ID and question; TTLs count
//     down from the time the answer was stored.
//   - A pod never gets an EDNS option back that it did not send.
package cache

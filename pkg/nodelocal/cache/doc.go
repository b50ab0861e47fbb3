// Package cache is the NodeLocal DNS cache: a miekg/dns handler that answers
// from a bounded cache and forwards misses, the cluster zones to the
// node-local-upstream service over TCP and every other zone to the host's
// resolvers.
//
// The cache follows the KEP's CoreDNS configuration: separate success and
// denial entries, each with its own capacity and TTL cap (defaults 9984
// entries / 30 s and 9984 / 5 s). An answer is a success when it is NOERROR
// with records in the answer section; NXDOMAIN and NOERROR without answers
// (NODATA) are denials; anything else (SERVFAIL, REFUSED, truncated answers)
// is never cached. Popular entries (hit PrefetchAmount times during their
// TTL) are refreshed in the background when PrefetchPercentage of their TTL
// is left, so hot names never miss. An expired entry is kept ServeStale
// longer and served, with a short TTL, when the upstream fails or answers
// SERVFAIL (RFC 8767).
//
// Invariants:
//   - The cache never holds more than its capacities; a full kind evicts a
//     random entry of the same kind (expired ones first when found).
//   - A cached answer is never served past its capped TTL, except as a stale
//     answer after an upstream failure.
//   - Concurrent misses for one question share one upstream query.
//   - The answer always carries the client's ID and question; TTLs count
//     down from the time the answer was stored.
//   - CHAOS TXT id.server. and hostname.bind. are answered locally with the
//     cache's identity: the HA watcher's probe, which must test the cache,
//     not its upstream.
package cache

// Package upstream answers DNS questions from a bounded cache or the
// upstream server of the question's zone. partition-dns uses it for every
// name outside the cluster zones (one route, "."), and node-cache
// (pkg/nodelocal/cache) for everything: the cluster zones to the
// node-local-upstream service over TCP, the rest to the host's resolvers.
// One cache and one upstream client, so that a feature such as EDNS Client
// Subnet scoping is built once.
//
// The cache follows the NodeLocal KEP's CoreDNS configuration: separate
// success and denial entries, each with its own capacity and TTL cap
// (node-cache's defaults 9984 entries / 30 s and 9984 / 5 s). An answer is a
// success when it is NOERROR with records in the answer section; NXDOMAIN
// and NOERROR without answers (NODATA) are denials, cached no longer than
// the SOA's minimum (RFC 2308); anything else (SERVFAIL, REFUSED, truncated
// answers) is never cached. Popular entries (hit PrefetchAmount times
// during their TTL) are refreshed in the background when
// PrefetchPercentage of their TTL is left. An expired entry is kept
// ServeStale longer and served, with a short TTL, when the upstream fails
// or answers SERVFAIL (RFC 8767). partition-dns turns prefetch and
// serve-stale off.
//
// A route with ClientSubnet sends the asking client's address upstream as
// an EDNS Client Subnet option (RFC 7871); an answer scoped to it is
// cached for that client alone, one scoped /0 for every client.
//
// Invariants:
//   - The cache never holds more than its capacities; a full kind evicts a
//     random entry of the same kind (expired ones first when found).
//   - A cached answer is never served past its capped TTL, except as a stale
//     answer after an upstream failure.
//   - Concurrent misses for one question (and client) share one upstream
//     exchange.
//   - A client never gets an entry cached for another client.
//   - A truncated UDP answer is retried over TCP.
package upstream

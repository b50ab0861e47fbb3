// Package forward resolves names through upstream DNS servers, with a cache.
// partition-dns uses it for every name outside the cluster zones. The
// NodeLocal cache (pkg/nodelocal/cache) has its own cache, because it needs
// separate success and denial capacities, prefetch and serve-stale.
//
// Invariants:
//   - A cached answer is served with its TTLs counted down, never past its
//     expiry, and never longer than the configured caps (positive answers
//     by MaxTTL, negative ones by MaxNegativeTTL from the SOA's minimum, as
//     RFC 2308 says).
//   - A truncated UDP answer is retried over TCP; truncated, SERVFAIL and
//     unparsable answers are never cached.
//   - Every method is safe for concurrent use; nothing runs in the
//     background.
package forward

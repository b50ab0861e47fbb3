// Package names is the grammar of partition-dns: it turns a query name,
// relative to one of the served zones, into the readings it can have. It does
// no lookups; the server asks the index about each reading in order and the
// first reading whose name exists wins.
//
// The tenant-aware form <svc>.<ns>.<tenant>.svc.<zone> and the upstream
// (legacy, system tenant) forms share label counts: "a.b.c.svc" is both the
// service a in namespace b of tenant c and the endpoint a of service b in the
// system namespace c. Parse returns both readings in a fixed order, documented
// in docs/dns.md.
//
// Invariants:
//   - Parse never allocates and never panics, whatever the input.
//   - Labels handed to Parse are lowercase; every byte slice in a Request
//     aliases the caller's labels.
package names

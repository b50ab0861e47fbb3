// Package server answers DNS queries for the cluster zones from the
// partition-aware index, and hands every other name to a forwarder. The rules
// (which names exist, NXDOMAIN versus NODATA, SOA in authority, TTLs, SRV
// weights, PTR) follow the CoreDNS kubernetes plugin; docs/dns.md states them.
//
// Answers for indexed names are encoded straight into a pooled buffer: owner
// names point at the question, so the answer keeps the query's case, and a
// lookup allocates nothing.
//
// Invariants:
//   - A query never panics the server; a name that cannot be parsed gets
//     FORMERR.
//   - Until MarkSynced, a cluster name that would be NXDOMAIN is SERVFAIL.
//   - UDP answers never exceed the client's size (512 without EDNS0); what
//     does not fit sets TC, and TCP carries the full answer.
package server

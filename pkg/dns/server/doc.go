// Package server answers DNS queries for the cluster zones from the
// partition-aware index, and hands every other name to a forwarder. The rules
// (which names exist, NXDOMAIN versus NODATA, SOA in authority, TTLs, SRV
// weights, PTR) follow the CoreDNS kubernetes plugin; docs/dns.md states them.
//
// Answers for indexed names are encoded straight into a pooled buffer: owner
// names point at the question, so the answer keeps the query's case, and a
// lookup allocates nothing.
//
// The files, by job: options.go (Options, PodMode, the defaults),
// handler.go (the Handler, ServeDNS and Respond: from a message to a
// reply), fast.go (the UDP fast path: plain queries read from the socket
// and answered without unpacking), answer.go (which records a question
// gets: zone, querier, lookup in the index, the special names, SOA and NS),
// records.go (writing A, AAAA, SRV and their additional records), external.go
// (ExternalName: CNAMEs, chased in the zones or forwarded), reverse.go (PTR
// and the reverse-zone fallthrough), forwarding.go (names outside the zones,
// bounded), wire.go (the encoder), validate.go (strict parsing), server.go
// and accept.go (sockets).
//
// Invariants:
//   - A query never panics the server; a name that cannot be parsed gets
//     FORMERR.
//   - Until MarkSynced, a cluster name that would be NXDOMAIN is SERVFAIL.
//   - UDP answers never exceed the client's size (512 without EDNS0); what
//     does not fit sets TC, and TCP carries the full answer.
package server

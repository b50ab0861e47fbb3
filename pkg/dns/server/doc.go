// Package server answers DNS queries for the cluster zones from the
// partition-aware index, and hands every other name to a forwarder. The rules
// (which names exist, NXDOMAIN versus NODATA, SOA in authority, TTLs, SRV
// weights, PTR) follow the CoreDNS kubernetes plugin; docs/dns.md states them.
//
// A query goes through three parts. The resolver (resolve.go) takes the
// question and the querier's address and returns a typed result: an outcome
// (answered, NXDOMAIN, not synced, refused, forwarded), the records as
// values, the partition that answered, and whether the querier's identity
// could change the answer. It reads the index and nothing else. Its
// lookups only add the records they find and say whether the name exists;
// one function (conclude) then decides the outcome and puts the zone's SOA
// in an answer without records, as CoreDNS's handler does at its end. The
// renderer (render.go) writes a result into a pooled buffer: owner names
// point at the question, so the answer keeps the query's case. The handler
// (handler.go) reads the request, calls the two, writes the reply and
// counts it. None of them allocates on a lookup.
//
// The files, by job: options.go (Options, PodMode, the defaults),
// handler.go (the Handler, ServeDNS and Respond: from a message to a
// reply), fast.go (the UDP fast path: plain queries read from the socket
// and answered without unpacking), zone.go (the served zones, and which
// holds a name), result.go (the result and record types), resolve.go (a
// question's way: its lookup, the CNAME chain of an ExternalName followed
// in the zones, and conclude), lookup.go (names below
// a forward zone, found in the index by the tenant rules), special.go (the
// apex, dns-version and ns.dns), querier.go (who asks, and what it may
// see), records.go (the A, AAAA, SRV and CNAME records of a found name),
// external.go (the forwarder asked for an ExternalName's target outside
// the zones), reverse.go (PTR, or the reverse-zone
// fallthrough), render.go (records to wire format), forwarding.go (names
// outside the zones, bounded), wire.go (the encoder), validate.go (strict
// parsing), server.go and accept.go (sockets).
//
// Invariants:
//   - A query never panics the server; a name that cannot be parsed gets
//     FORMERR.
//   - Until MarkSynced, a cluster name that would be NXDOMAIN is SERVFAIL.
//   - Only conclude sets a result's outcome and adds the SOA of an answer
//     without records; a lookup returns a verdict.
//   - UDP answers never exceed the client's size (512 without EDNS0); what
//     does not fit sets TC, and TCP carries the full answer.
package server

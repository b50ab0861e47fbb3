package server

import (
	"net/netip"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
)

// outcome is the resolver's verdict on a question.
type outcome uint8

const (
	// answered: the name exists. The result holds its records of the
	// asked type, or, when it has none (NODATA), the zone's SOA as
	// authority.
	answered outcome = iota
	// noSuchName is NXDOMAIN, with the zone's SOA as authority.
	noSuchName
	// notSynced is a miss before the first sync, when the name may exist
	// but not be indexed yet: SERVFAIL (with the SOA), which clients do not
	// cache as they would NXDOMAIN.
	notSynced
	// refused: zone transfers and classes other than IN.
	refused
	// forwarded: the name is not the server's to answer (outside the zones,
	// or a reverse name that falls through); it goes to the upstreams.
	forwarded
)

// verdict is what a lookup says of a name, besides the records it adds:
// the resolver turns it into the outcome, in one place (conclude).
type verdict uint8

const (
	// exists: the name exists, with the records added (none: NODATA).
	exists verdict = iota
	// missing: the name does not exist.
	missing
	// fallsThrough: a reverse name the index has no owner of, which the
	// forwarder answers when there is one.
	fallsThrough
	// refuse: a question the server does not answer (zone transfers,
	// classes other than IN).
	refuse
)

// rcode is the response code of an answer with this outcome.
func (o outcome) rcode() int {
	switch o {
	case noSuchName:
		return dns.RcodeNameError
	case notSynced:
		return dns.RcodeServerFailure
	case refused:
		return dns.RcodeRefused
	}
	return dns.RcodeSuccess
}

// result is what the resolver found for one question, as values: no
// sockets, no wire format. The renderer writes it into a reply.
type result struct {
	outcome outcome
	// zone is the zone of the question; nil when outcome is forwarded
	// because the name is in none.
	zone *zone
	// records are the records of the reply, answer section first, then
	// authority, then additional. They live in the query's scratch space
	// and are valid until its next question.
	records []record
	// upstream, when set, is the target of an ExternalName outside the
	// zones that ends the CNAME chain in records: its records of the asked
	// type are the upstream's to add.
	upstream string
	// tp is the partition whose objects answered, when fromTP is true.
	tp     int
	fromTP bool
	// identity reports that the querier's partition or tenant was
	// consulted in a way that can change the result: another querier may
	// get another answer to the same question.
	identity bool
	// unsure reports that the querier is unknown and the answer is the
	// system partition's for a system name other partitions have too: the
	// querier, once known, may be due another answer (TTL 0).
	unsure bool
}

// answers reports whether the result has records in the answer section.
func (r *result) answers() bool {
	return len(r.records) > 0 && r.records[0].section == answerSection
}

// answeredBy notes that partition tp answered.
func (r *result) answeredBy(tp int) { r.tp, r.fromTP = tp, true }

// add appends rec to the result. The hot paths use st.next instead, which
// fills the record in place of copying it.
func (h *Handler) add(st *state, rec record) {
	st.res.records = append(st.res.records, rec)
}

// next appends a zero record to the result and returns it.
func (st *state) next() *record {
	recs := st.res.records
	if len(recs) < cap(recs) {
		recs = recs[:len(recs)+1]
		recs[len(recs)-1] = record{}
	} else {
		recs = append(recs, record{})
	}
	st.res.records = recs
	return &recs[len(recs)-1]
}

// soaTTL is the TTL of the zone's SOA record, in answers and as authority.
func (h *Handler) soaTTL() uint32 { return min(h.opts.TTL, maxSOATTL) }

// rrKind is the type of a record in a result.
type rrKind uint8

const (
	rrAddr  rrKind = iota // A or AAAA, by the address: addr
	rrCNAME               // to text
	rrSRV                 // priority 0, weight, port, to target
	rrPTR                 // to the name of owns
	rrNS                  // to ns.dns.<zone>
	rrSOA                 // the zone's SOA, with serial
	rrTXT                 // text
)

// ownerKind says whose record a record is.
type ownerKind uint8

const (
	// ownerQuestion is the question's name, or, past a CNAME in the
	// answer, that CNAME's target.
	ownerQuestion ownerKind = iota
	// ownerTarget is the record's target name (SRV targets' addresses).
	ownerTarget
	// ownerNameServer is ns.dns.<zone> (the glue of the apex NS).
	ownerNameServer
	// ownerZone is the zone apex (the SOA of a negative answer).
	ownerZone
)

// serviceName is "[host.]service.namespace[.tenant].svc.<zone>": the target
// of SRV records. It points at the index's names rather than copy
// them, which costs the fast path about 5%.
type serviceName struct {
	host      *index.EndpointView // the endpoint a [host.] label names; nil for none
	service   *index.ServiceSpec
	namespace *index.NamespaceID
	// legacy leaves the tenant label out.
	legacy bool
	zone   *zone
}

// record is one resource record of a result.
type record struct {
	kind    rrKind
	section section
	owner   ownerKind
	ttl     uint32
	addr    netip.Addr
	// port and weight are an SRV record's.
	port, weight uint16
	// serial is an SOA record's.
	serial uint32
	// target is the name an SRV record points to, and the owner of an
	// ownerTarget record.
	target serviceName
	// owns is what a PTR record's address belongs to: the record points to
	// its name in the primary zone.
	owns *index.PTR
	// text is a CNAME's target or a TXT record's string.
	text string
}

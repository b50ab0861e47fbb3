package server

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/names"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// zoneOf returns the longest served zone that contains the lowercase wire
// name lw, whose labels start at offs.
func (h *Handler) zoneOf(lw []byte, offs []uint8) (*zone, bool) {
	var best *zone
	for i := range h.zones {
		z := &h.zones[i]
		if len(z.wire) > len(lw) || (best != nil && len(z.wire) <= len(best.wire)) {
			continue
		}
		at := len(lw) - len(z.wire)
		if string(lw[at:]) != string(z.wire) {
			continue
		}
		for _, o := range offs {
			if int(o) == at {
				best = z
				break
			}
		}
	}
	return best, best != nil
}

// resolve answers the question whose lowercase name is in st.lw (split at
// st.offs), in zone z, for a querier at src. It reads the index and nothing
// else, and returns st.res.
func (h *Handler) resolve(st *state, z *zone, qtype, qclass uint16, src netip.Addr) *result {
	// Field by field: assigning whole structs that hold pointers costs the
	// fast path about 5%.
	res := &st.res
	res.outcome, res.zone, res.records, res.upstream = answered, z, st.recs[:0], ""
	res.tp, res.fromTP, res.identity, res.unsure = 0, false, false, false
	st.who.addr, st.who.looked = src, false
	if qtype == dns.TypeAXFR || qtype == dns.TypeIXFR || qclass != dns.ClassINET {
		res.outcome = refused
		return res
	}
	st.snap = h.snaps.Current()
	nrel := st.nl - z.nlabels
	for i := 0; i < nrel; i++ {
		st.labels[i] = names.Label(st.lw[:], st.offs[:], i)
	}
	switch {
	case nrel == 0:
		h.resolveApex(st, z, qtype)
	case qtype == dns.TypeSOA:
		// CoreDNS answers SOA only at the apex, and NODATA for any name below.
		h.noData(st, z)
	case z.reverse:
		h.resolveReverse(st, z, qtype)
	default:
		h.resolveName(st, z, qtype)
	}
	// A system name that several TPs have, answered from the system
	// partition to a querier the index does not know (a new pod whose
	// address its TP has not reported yet, or a host-network client), has
	// TTL 0: a cache in front (node-cache, a client's own) must not keep
	// that answer for a pod that is known, in another TP, a moment later
	// (docs/dns.md, "The system tenant").
	if res.unsure {
		for i := range res.records {
			res.records[i].ttl = 0
		}
	}
	st.recs = res.records // keep the grown scratch space
	return res
}

// resolveApex answers the zone's own name: SOA, NS, or NODATA.
func (h *Handler) resolveApex(st *state, z *zone, qtype uint16) {
	switch qtype {
	case dns.TypeSOA:
		h.add(st, record{kind: rrSOA, ttl: h.soaTTL(), serial: st.snap.Serial})
		return
	case dns.TypeNS:
		if len(h.opts.NSAddrs) > 0 {
			h.add(st, record{kind: rrNS, ttl: h.opts.TTL})
			for _, a := range h.nsAddrs(st) {
				h.add(st, record{kind: rrAddr, section: extraSection, owner: ownerNameServer, ttl: h.opts.TTL, addr: a})
			}
			return
		}
	}
	h.noData(st, z)
}

// resolveName answers a name below a forward zone: a service, endpoint,
// pod, namespace or tenant name, or dns-version and ns.dns.
func (h *Handler) resolveName(st *state, z *zone, qtype uint16) {
	nrel := st.nl - z.nlabels
	req := names.Parse(st.labels[:nrel])
	switch req.Kind {
	case names.Invalid:
		h.noSuchName(st, z)
		return
	case names.Apex:
		h.noData(st, z)
		return
	case names.DNSVersion, names.NameServer:
		if !h.special(st, req.Kind, qtype) {
			h.noSuchName(st, z)
			return
		}
		h.finishAnswer(st, z)
		return
	}
	var f found
	rd, ok := h.lookup(st, &req, &f)
	if !ok {
		h.noSuchName(st, z)
		return
	}
	if rd.Form != names.TenantOnly {
		st.res.answeredBy(f.tp)
	}
	h.nameRecords(st, z, rd, &f, qtype, 0)
	h.finishAnswer(st, z)
}

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

// finishAnswer makes an answer without answer records a NODATA one.
func (h *Handler) finishAnswer(st *state, z *zone) {
	if !st.res.answers() {
		h.noData(st, z)
	}
}

// noData is an answer with no records but the zone's SOA as authority.
func (h *Handler) noData(st *state, z *zone) {
	r := st.next()
	r.kind, r.section, r.owner, r.ttl, r.serial = rrSOA, authoritySection, ownerZone, h.soaTTL(), st.snap.Serial
}

// noSuchName is NXDOMAIN, or SERVFAIL before the first sync.
func (h *Handler) noSuchName(st *state, z *zone) {
	st.res.outcome = noSuchName
	if !h.synced.Load() {
		st.res.outcome = notSynced
	}
	h.noData(st, z)
}

func (h *Handler) soaTTL() uint32 { return min(h.opts.TTL, maxSOATTL) }

// special adds the records of dns-version.<zone> and ns.dns.<zone>, which
// CoreDNS answers in every zone it serves, reverse ones too. It returns
// false when CoreDNS reads the query as one for a service name, which does
// not exist: dns-version for any type but TXT, ns.dns for TXT and PTR.
func (h *Handler) special(st *state, k names.Kind, qtype uint16) bool {
	if k == names.DNSVersion {
		if qtype != dns.TypeTXT {
			return false
		}
		h.add(st, record{kind: rrTXT, ttl: dnsVersionTTL, text: DNSSchemaVersion})
		return true
	}
	switch qtype {
	case dns.TypeTXT, dns.TypePTR:
		return false
	case dns.TypeA, dns.TypeAAAA:
		for _, a := range h.nsAddrs(st) {
			if a.Is6() == (qtype == dns.TypeAAAA) {
				h.add(st, record{kind: rrAddr, ttl: h.opts.TTL, addr: a})
			}
		}
	}
	return true
}

// nsAddrs returns the addresses of ns.dns.<zone>, in st.addrs. CoreDNS
// answers the cluster IPs of the services whose endpoints are its own
// addresses (the kube-dns service), the endpoint addresses for a headless
// one, and its own addresses when it finds no such endpoint. Here each
// partition may have its own kube-dns service in front of the server: the
// querier's partition is tried first, then the system partition, then the
// rest, and the first with such a service (visible to the querier)
// answers, so that a pod gets the address it reaches the server at.
func (h *Handler) nsAddrs(st *state) []netip.Addr {
	snap := st.snap
	dst := st.addrs[:0]
	defer func() { st.addrs = dst }()
	if len(h.opts.NSAddrs) == 0 {
		return dst
	}
	h.identify(&st.who, snap)
	st.res.identity = true
	ntp := len(snap.TPs)
	for k := 0; k < ntp; k++ {
		tp, ok := partitionAt(k, ntp, st.who.source, h.opts.SystemPartition)
		if !ok {
			continue
		}
		for _, own := range h.opts.NSAddrs {
			owners := snap.PTRs(own)
			for i := range owners {
				o := &owners[i]
				if o.TP != tp || !o.IsEndpoint() || !h.ptrVisible(snap, o, &st.who) {
					continue
				}
				svc := o.Spec()
				if svc.Type != index.Headless {
					dst = appendNew(dst, svc.ClusterIPs()...)
					continue
				}
				if v := snap.ServiceOf(o); v != nil {
					for j, n := 0, v.AddrCount(); j < n; j++ {
						dst = appendNew(dst, v.Addr(j))
					}
				}
			}
		}
		if len(dst) > 0 {
			st.res.answeredBy(tp)
			return dst
		}
	}
	dst = appendNew(dst, h.opts.NSAddrs...)
	return dst
}

// appendNew appends the addresses of as that dst does not hold yet.
func appendNew(dst []netip.Addr, as ...netip.Addr) []netip.Addr {
	for _, a := range as {
		if !slices.Contains(dst, a) {
			dst = append(dst, a)
		}
	}
	return dst
}

// found is what a reading of a name found (see find).
type found struct {
	tp  int
	ns  *index.NamespaceView
	svc *index.ServiceView
	pod netip.Addr
}

var systemTenant = []byte(tenancy.SystemTenant)

// allowed applies tenant isolation to a regular tenant's name.
func (h *Handler) allowed(tenant []byte, who *querier) bool {
	if !h.opts.Isolation {
		return true
	}
	if !who.known {
		return h.opts.AllowUnknownSources
	}
	return who.source.Tenant == tenancy.SystemTenant || who.source.Tenant == string(tenant)
}

// partitionAt returns the k-th partition of n to try for a system-tenant
// name: the querier's, then the system partition sys, then the rest in
// order. It reports false when there is no k-th partition.
func partitionAt(k, n int, src index.Source, sys int) (int, bool) {
	first, second := src.TP, sys
	if k == 0 {
		return first, first >= 0 && first < n
	}
	if second != first {
		if k == 1 {
			return second, second >= 0 && second < n
		}
		k--
	}
	k--
	for tp := 0; tp < n; tp++ {
		if tp == first || tp == second {
			continue
		}
		if k == 0 {
			return tp, true
		}
		k--
	}
	return 0, false
}

// lookup returns the first reading of req that names something that
// exists, and what it found in f (see find).
func (h *Handler) lookup(st *state, req *names.Request, f *found) (*names.Reading, bool) {
	for i := 0; i < req.N; i++ {
		if rd := &req.Readings[i]; h.find(st, rd, f) {
			return rd, true
		}
	}
	return nil, false
}

// find decides whether a reading names something that exists, following
// CoreDNS's findServices and findPods. A system-tenant name is looked for
// in the querier's partition first (see partitionAt); a regular tenant's
// only in its home partition, and only when isolation lets the querier see
// it.
func (h *Handler) find(st *state, rd *names.Reading, f *found) bool {
	snap := st.snap
	tenant := rd.Tenant
	system := rd.Legacy || string(tenant) == tenancy.SystemTenant
	if system {
		tenant = systemTenant
	}
	ntp := len(snap.TPs)
	tps := ntp
	home := 0
	if system {
		if ntp > 1 {
			h.identify(&st.who, snap)
			st.res.identity = true
		}
	} else {
		if h.opts.Isolation {
			h.identify(&st.who, snap)
			st.res.identity = true
			if !h.allowed(tenant, &st.who) {
				return false
			}
		}
		tp, ok := snap.Home(tenant)
		if !ok {
			return false
		}
		home, tps = tp, 1
	}
	if rd.Form == names.TenantOnly {
		*f = found{tp: home}
		return true
	}
	for k := 0; k < tps; k++ {
		tp := home
		if system {
			var ok bool
			if tp, ok = partitionAt(k, ntp, st.who.source, h.opts.SystemPartition); !ok {
				continue
			}
		}
		ns := snap.Namespace(tp, tenant, rd.Namespace)
		if !ns.Exists() {
			continue
		}
		*f = found{tp: tp, ns: ns}
		switch rd.Form {
		case names.NamespaceOnly:
			return true
		case names.PodName:
			if h.opts.Pods == PodsDisabled {
				return false
			}
			ia, ok := names.ParseDashedIP(rd.Service)
			if !ok {
				return false
			}
			a := netipOf(ia)
			if h.opts.Pods == PodsVerified && !snap.HasPod(a, tp, tenant, rd.Namespace) {
				continue
			}
			f.pod = a
			return true
		}
		svc := ns.ServiceBytes(rd.Service)
		if svc == nil {
			continue
		}
		// The service exists here: this partition answers, records or not.
		f.svc = svc
		if system && !st.who.known && ntp > 1 && serviceElsewhere(snap, tenant, rd, tp) {
			st.res.unsure = true
		}
		return hasRecords(svc, rd)
	}
	return false
}

// serviceElsewhere reports whether a partition other than tp has the
// service rd names: then a known querier there would get another answer.
func serviceElsewhere(snap *index.Snapshot, tenant []byte, rd *names.Reading, tp int) bool {
	for other := range snap.TPs {
		if other == tp {
			continue
		}
		if ns := snap.Namespace(other, tenant, rd.Namespace); ns.Exists() && ns.ServiceBytes(rd.Service) != nil {
			return true
		}
	}
	return false
}

func portMatch(rd *names.Reading, p *index.Port) bool {
	return (len(rd.Port) == 0 || strings.EqualFold(string(rd.Port), p.Name)) &&
		(len(rd.Protocol) == 0 || strings.EqualFold(string(rd.Protocol), p.Protocol))
}

func anyPort(rd *names.Reading, ports []index.Port) bool {
	for i := range ports {
		if portMatch(rd, &ports[i]) {
			return true
		}
	}
	return false
}

// hasRecords is CoreDNS's rule for whether a service name exists: an
// ExternalName by its bare name only (it has no endpoints, and CoreDNS
// 1.11 takes no port or protocol labels either) and only when its target
// is a name (CoreDNS makes no CNAME to an IP address), a headless service
// or an endpoint name when a ready endpoint matches, a ClusterIP service
// when a port matches.
func hasRecords(svc *index.ServiceView, rd *names.Reading) bool {
	if svc.Type == index.ExternalName {
		return rd.Form == names.ServiceName && len(rd.Port) == 0 && len(rd.Protocol) == 0 && !names.IsAddress(svc.ExternalName())
	}
	if svc.Type == index.Headless || rd.Form == names.EndpointName {
		for i := range svc.Endpoints {
			ep := &svc.Endpoints[i]
			if rd.Form == names.EndpointName && !ep.HostIs(rd.Endpoint) {
				continue
			}
			if anyPort(rd, ep.Ports()) {
				return true
			}
		}
		return false
	}
	return anyPort(rd, svc.Ports())
}

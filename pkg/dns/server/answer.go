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
// name lw, or -1.
func (h *Handler) zoneOf(lw []byte, offs []uint8) int {
	best, bestLen := -1, -1
	for i := range h.zones {
		z := h.zones[i].wire
		if len(z) > len(lw) || len(z) <= bestLen {
			continue
		}
		at := len(lw) - len(z)
		if string(lw[at:]) != string(z) {
			continue
		}
		boundary := false
		for _, o := range offs {
			if int(o) == at {
				boundary = true
				break
			}
		}
		if boundary {
			best, bestLen = i, len(z)
		}
	}
	return best
}

// answer writes the answer for a name in zone zi and returns the rcode.
func (h *Handler) answer(st *state, zi int, qtype, qclass uint16, src netip.Addr) int {
	z := &h.zones[zi]
	e := &st.enc
	if qtype == dns.TypeAXFR || qtype == dns.TypeIXFR || qclass != dns.ClassINET {
		return dns.RcodeRefused
	}
	snap := h.snaps.Current()
	st.src = src
	nrel := st.nl - z.nlabels
	lw := st.lw[:]
	for i := 0; i < nrel; i++ {
		st.labels[i] = names.Label(lw, st.offs[:], i)
	}
	labels := st.labels[:nrel]
	if nrel == 0 {
		switch qtype {
		case dns.TypeSOA:
			h.soa(e, z, snap, answerSection, true)
			return dns.RcodeSuccess
		case dns.TypeNS:
			h.querier(st, snap)
			h.ns(st, z, snap)
			if e.counts[answerSection] > 0 {
				return dns.RcodeSuccess
			}
		}
		return h.nodata(e, z, snap)
	}
	if qtype == dns.TypeSOA {
		// CoreDNS answers SOA only at the apex and NODATA for any name below.
		return h.nodata(e, z, snap)
	}
	if z.reverse {
		h.querier(st, snap)
		return h.reverse(st, z, snap, qtype)
	}
	req := names.Parse(labels)
	switch req.Kind {
	case names.Invalid:
		return h.nxdomain(e, z, snap)
	case names.Apex:
		return h.nodata(e, z, snap)
	case names.DNSVersion, names.NameServer:
		h.querier(st, snap)
		if !h.special(st, snap, req.Kind, qtype) {
			return h.nxdomain(e, z, snap)
		}
		return h.finishAnswer(e, z, snap)
	}
	// The querier is looked up only now: doing it before Parse costs the
	// fast path about 10% (measured with BenchmarkLookupLegacyA).
	source, known := h.querier(st, snap)
	for i := 0; i < req.N; i++ {
		if f, ok := h.find(snap, &req.Readings[i], source, known); ok {
			h.records(st, z, snap, &f, qtype, 0)
			return h.finishAnswer(e, z, snap)
		}
	}
	return h.nxdomain(e, z, snap)
}

// querier reads what the index says of the querier at st.src into
// st.source and st.known, and returns them: an unknown source counts as
// one in the system partition.
func (h *Handler) querier(st *state, snap *index.Snapshot) (index.Source, bool) {
	source, known := snap.Source(st.src)
	if !known {
		source = index.Source{TP: h.opts.SystemPartition}
	}
	st.source, st.known = source, known
	return source, known
}

// lookup returns the first reading of req that names something that
// exists (see find).
func (h *Handler) lookup(snap *index.Snapshot, req *names.Request, src index.Source, known bool) (found, bool) {
	for i := 0; i < req.N; i++ {
		if f, ok := h.find(snap, &req.Readings[i], src, known); ok {
			return f, true
		}
	}
	return found{}, false
}

// special answers dns-version.<zone> and ns.dns.<zone>, which CoreDNS
// answers in every zone it serves, reverse ones too. It returns false when
// CoreDNS reads the query as one for a service name, which does not exist:
// dns-version for any type but TXT, ns.dns for TXT and PTR.
func (h *Handler) special(st *state, snap *index.Snapshot, k names.Kind, qtype uint16) bool {
	e := &st.enc
	if k == names.DNSVersion {
		if qtype != dns.TypeTXT {
			return false
		}
		r := e.begin(answerSection)
		e.owner()
		rd := e.typ(typeTXT, dnsVersionTTL)
		e.label(DNSSchemaVersion)
		e.end(r, rd)
		return true
	}
	switch qtype {
	case dns.TypeTXT, dns.TypePTR:
		return false
	case dns.TypeA, dns.TypeAAAA:
		st.addrs = h.nsAddrs(st.addrs[:0], snap, st.source, st.known)
		for _, a := range st.addrs {
			if a.Is6() == (qtype == dns.TypeAAAA) {
				r := e.begin(answerSection)
				e.owner()
				e.addr(r, a, h.opts.TTL)
			}
		}
	}
	return true
}

// nsAddrs appends the addresses of ns.dns.<zone> to dst. CoreDNS answers
// the cluster IPs of the services whose endpoints are its own addresses
// (the kube-dns service), the endpoint addresses for a headless one, and
// its own addresses when it finds no such endpoint. Here each partition
// may have its own kube-dns service in front of the server: the querier's
// partition is tried first, then the system partition, then the rest, and
// the first with such a service (visible to the querier) answers, so that
// a pod gets the address it reaches the server at.
func (h *Handler) nsAddrs(dst []netip.Addr, snap *index.Snapshot, src index.Source, known bool) []netip.Addr {
	ntp := len(snap.TPs)
	for k := 0; k < ntp; k++ {
		tp := partitionAt(k, ntp, src, h.opts.SystemPartition)
		if tp < 0 || tp >= ntp {
			continue
		}
		for _, own := range h.opts.NSAddrs {
			owners := snap.PTRs(own)
			for i := range owners {
				o := &owners[i]
				if o.TP != tp || !o.IsEndpoint() || !h.ptrVisible(snap, o, src, known) {
					continue
				}
				svc := o.Spec()
				if svc.Type != index.Headless {
					dst = appendNew(dst, svc.ClusterIPs...)
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
			return dst
		}
	}
	return appendNew(dst, h.opts.NSAddrs...)
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

func (h *Handler) finishAnswer(e *encoder, z *zone, snap *index.Snapshot) int {
	if e.counts[answerSection] == 0 && !e.tc {
		return h.nodata(e, z, snap)
	}
	return dns.RcodeSuccess
}

func (h *Handler) nodata(e *encoder, z *zone, snap *index.Snapshot) int {
	h.soa(e, z, snap, authoritySection, false)
	return dns.RcodeSuccess
}

func (h *Handler) nxdomain(e *encoder, z *zone, snap *index.Snapshot) int {
	h.soa(e, z, snap, authoritySection, false)
	if !h.synced.Load() {
		return dns.RcodeServerFailure
	}
	return dns.RcodeNameError
}

func (h *Handler) soa(e *encoder, z *zone, snap *index.Snapshot, sec section, ownerQ bool) {
	ttl := min(h.opts.TTL, maxSOATTL)
	r := e.begin(sec)
	if ownerQ {
		e.owner()
	} else {
		e.buf = append(e.buf, z.wire...)
	}
	rd := e.typ(typeSOA, ttl)
	e.label("ns")
	e.label("dns")
	e.buf = append(e.buf, z.wire...)
	e.label("hostmaster")
	e.buf = append(e.buf, z.wire...)
	e.u32(snap.Serial)
	e.u32(7200)
	e.u32(1800)
	e.u32(86400)
	e.u32(h.opts.TTL)
	e.end(r, rd)
}

// ns answers the NS query at the apex: ns.dns.<zone>, with the addresses
// ns.dns.<zone> has for the querier as glue.
func (h *Handler) ns(st *state, z *zone, snap *index.Snapshot) {
	e := &st.enc
	if len(h.opts.NSAddrs) == 0 {
		return
	}
	r := e.begin(answerSection)
	e.owner()
	rd := e.typ(typeNS, h.opts.TTL)
	e.label("ns")
	e.label("dns")
	e.buf = append(e.buf, z.wire...)
	e.end(r, rd)
	st.addrs = h.nsAddrs(st.addrs[:0], snap, st.source, st.known)
	for _, a := range st.addrs {
		r := e.begin(extraSection)
		e.label("ns")
		e.label("dns")
		e.buf = append(e.buf, z.wire...)
		e.addr(r, a, h.opts.TTL)
	}
}

// found is a reading that names something that exists.
type found struct {
	rd  *names.Reading
	tp  int
	ns  *index.NamespaceView
	svc *index.ServiceView
	pod netip.Addr
}

var systemTenant = []byte(tenancy.SystemTenant)

// allowed applies tenant isolation to a regular tenant's name.
func (h *Handler) allowed(tenant []byte, src index.Source, known bool) bool {
	if !h.opts.Isolation {
		return true
	}
	if !known {
		return h.opts.AllowUnknownSources
	}
	return src.Tenant == tenancy.SystemTenant || src.Tenant == string(tenant)
}

// partitionAt returns the k-th partition to try for a system-tenant name:
// the querier's, then the system partition, then the rest in order.
func partitionAt(k, n int, src index.Source, sys int) int {
	first, second := src.TP, sys
	if k == 0 {
		return first
	}
	if second != first {
		if k == 1 {
			return second
		}
		k--
	}
	k--
	for tp := 0; tp < n; tp++ {
		if tp == first || tp == second {
			continue
		}
		if k == 0 {
			return tp
		}
		k--
	}
	return -1
}

// find decides whether a reading names something that exists, following
// CoreDNS's findServices and findPods.
func (h *Handler) find(snap *index.Snapshot, rd *names.Reading, src index.Source, known bool) (found, bool) {
	tenant := rd.Tenant
	system := rd.Legacy || string(tenant) == tenancy.SystemTenant
	if system {
		tenant = systemTenant
	}
	ntp := len(snap.TPs)
	tps := ntp
	home := -1
	if !system {
		if !h.allowed(tenant, src, known) {
			return found{}, false
		}
		tp, ok := snap.Home(tenant)
		if !ok {
			return found{}, false
		}
		home, tps = tp, 1
	}
	if rd.Form == names.TenantOnly {
		return found{rd: rd}, true
	}
	for k := 0; k < tps; k++ {
		tp := home
		if system {
			tp = partitionAt(k, ntp, src, h.opts.SystemPartition)
			if tp < 0 || tp >= ntp {
				continue
			}
		}
		ns := snap.Namespace(tp, tenant, rd.Namespace)
		if !ns.Exists() {
			continue
		}
		f := found{rd: rd, tp: tp, ns: ns}
		switch rd.Form {
		case names.NamespaceOnly:
			return f, true
		case names.PodName:
			if h.opts.Pods == PodsDisabled {
				return found{}, false
			}
			a, ok := names.ParseDashedIP(rd.Service)
			if !ok {
				return found{}, false
			}
			if h.opts.Pods == PodsVerified {
				if !snap.HasPod(a, tp, tenant, rd.Namespace) {
					continue
				}
			}
			f.pod = a
			return f, true
		}
		svc := ns.Services[string(rd.Service)]
		if svc == nil {
			continue
		}
		// The service exists here: this partition answers, records or not.
		f.svc = svc
		return f, hasRecords(svc, rd)
	}
	return found{}, false
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
		return rd.Form == names.ServiceName && len(rd.Port) == 0 && len(rd.Protocol) == 0 && !names.IsAddress(svc.ExternalName)
	}
	if svc.Type == index.Headless || rd.Form == names.EndpointName {
		for i := range svc.Endpoints {
			ep := &svc.Endpoints[i]
			if rd.Form == names.EndpointName && ep.Host != string(rd.Endpoint) {
				continue
			}
			if anyPort(rd, ep.Ports) {
				return true
			}
		}
		return false
	}
	return anyPort(rd, svc.Ports)
}

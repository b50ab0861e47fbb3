package server

import "github.com/tpkit-dev/tpkit/pkg/tenancy"

// render writes the records of res into e, in order. Records that do not
// fit are dropped as the encoder decides (setting TC for the answer and
// authority sections).
func (h *Handler) render(e *encoder, res *result) {
	for i := range res.records {
		rec := &res.records[i]
		r := e.begin(rec.section)
		switch rec.owner {
		case ownerQuestion:
			e.owner()
		case ownerTarget:
			e.serviceName(&rec.target)
		case ownerNameServer:
			e.nameServer(res.zone)
		case ownerZone:
			e.buf = append(e.buf, res.zone.wire...)
		}
		switch rec.kind {
		case rrAddr:
			e.addr(r, rec.addr, rec.ttl)
		case rrCNAME:
			rd := e.typ(typeCNAME, rec.ttl)
			e.fqdn(rec.text)
			// Records after a CNAME in the answer are its target's.
			if e.end(r, rd) {
				if p, ok := pointerTo(rd); ok {
					e.ownerPtr = p
				}
			}
		case rrSRV:
			rd := e.typ(typeSRV, rec.ttl)
			e.u16(0)
			e.u16(rec.weight)
			e.u16(rec.port)
			e.serviceName(&rec.target)
			e.end(r, rd)
		case rrPTR:
			rd := e.typ(typePTR, rec.ttl)
			o := rec.owns
			if ep := o.Endpoint(); ep != nil {
				e.hostLabel(ep)
			}
			e.label(o.Service())
			e.label(o.Namespace)
			if o.Tenant != tenancy.SystemTenant {
				e.label(o.Tenant)
			}
			e.label("svc")
			e.buf = append(e.buf, h.primary.wire...)
			e.end(r, rd)
		case rrNS:
			rd := e.typ(typeNS, rec.ttl)
			e.nameServer(res.zone)
			e.end(r, rd)
		case rrSOA:
			h.soa(e, r, res.zone, rec)
		case rrTXT:
			rd := e.typ(typeTXT, rec.ttl)
			e.label(rec.text)
			e.end(r, rd)
		}
	}
}

// soa writes the RDATA of zone z's SOA record rec.
func (h *Handler) soa(e *encoder, r rr, z *zone, rec *record) {
	rd := e.typ(typeSOA, rec.ttl)
	e.nameServer(z)
	e.label("hostmaster")
	e.buf = append(e.buf, z.wire...)
	e.u32(rec.serial)
	e.u32(7200)
	e.u32(1800)
	e.u32(86400)
	e.u32(h.opts.TTL)
	e.end(r, rd)
}

// nameServer writes ns.dns.<zone>.
func (e *encoder) nameServer(z *zone) {
	e.label("ns")
	e.label("dns")
	e.buf = append(e.buf, z.wire...)
}

// serviceName writes "[host.]service.namespace[.tenant].svc.<zone>".
func (e *encoder) serviceName(n *serviceName) {
	if n.host != nil {
		e.hostLabel(n.host)
	}
	e.label(n.service.Name)
	e.label(n.namespace.Namespace)
	if !n.legacy {
		e.label(n.namespace.Tenant)
	}
	e.label("svc")
	e.buf = append(e.buf, n.zone.wire...)
}

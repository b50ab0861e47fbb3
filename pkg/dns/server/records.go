package server

import (
	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/names"
)

// records writes the answer records of a found name for qtype; depth is
// the number of CNAMEs followed to reach it.
func (h *Handler) records(st *state, z *zone, snap *index.Snapshot, f *found, qtype uint16, depth int) {
	e := &st.enc
	ttl := h.opts.TTL
	switch f.rd.Form {
	case names.TenantOnly, names.NamespaceOnly:
		return
	case names.PodName:
		if (qtype == dns.TypeA && f.pod.Is4()) || (qtype == dns.TypeAAAA && f.pod.Is6()) {
			r := e.begin(answerSection)
			e.owner()
			e.addr(r, f.pod, ttl)
		}
		return
	}
	svc := f.svc
	switch qtype {
	case dns.TypeA, dns.TypeAAAA:
		want6 := qtype == dns.TypeAAAA
		switch {
		case svc.Type == index.ExternalName:
			h.cname(st, snap, svc.ExternalName, qtype, depth)
		case svc.Type == index.Headless || f.rd.Form == names.EndpointName:
			if f.rd.Form != names.EndpointName && len(f.rd.Port) == 0 && len(f.rd.Protocol) == 0 {
				for i, n := 0, svc.AddrCount(); i < n; i++ {
					if a := svc.Addr(i); a.Is6() == want6 {
						r := e.begin(answerSection)
						e.owner()
						e.addr(r, a, ttl)
					}
				}
				return
			}
			for i := range svc.Endpoints {
				ep := &svc.Endpoints[i]
				if ep.Addr.Is6() != want6 || !endpointMatch(f.rd, ep) || seenAddr(svc, i, f.rd) {
					continue
				}
				r := e.begin(answerSection)
				e.owner()
				e.addr(r, ep.Addr, ttl)
			}
		default:
			for _, a := range svc.ClusterIPs {
				if a.Is6() == want6 {
					r := e.begin(answerSection)
					e.owner()
					e.addr(r, a, ttl)
				}
			}
		}
	case dns.TypeCNAME:
		if svc.Type == index.ExternalName {
			r := e.begin(answerSection)
			e.owner()
			rd := e.typ(typeCNAME, ttl)
			e.fqdn(svc.ExternalName)
			e.end(r, rd)
		}
	case dns.TypeSRV:
		h.srv(e, z, f)
	}
}

func endpointMatch(rd *names.Reading, ep *index.EndpointView) bool {
	if rd.Form == names.EndpointName && ep.Host != string(rd.Endpoint) {
		return false
	}
	return anyPort(rd, ep.Ports)
}

// seenAddr reports whether an earlier matching endpoint has the address of
// endpoint i (the same address can be in two slices).
func seenAddr(svc *index.ServiceView, i int, rd *names.Reading) bool {
	for j := 0; j < i; j++ {
		if svc.Endpoints[j].Addr == svc.Endpoints[i].Addr && endpointMatch(rd, &svc.Endpoints[j]) {
			return true
		}
	}
	return false
}

// target writes "[host.]svc.ns[.tenant].svc.<zone>", in the form of the
// query: legacy names get legacy targets.
func (e *encoder) target(z *zone, f *found, host string) {
	if host != "" {
		e.label(host)
	}
	e.label(f.svc.Name)
	e.labelBytes(f.rd.Namespace)
	if !f.rd.Legacy {
		e.labelBytes(f.rd.Tenant)
	}
	e.label("svc")
	e.buf = append(e.buf, z.wire...)
}

// srv writes one answer-section SRV record for the queried name: priority
// 0, weight w, port and the target host (see target).
func (e *encoder) srv(z *zone, f *found, ttl uint32, w uint16, port int32, host string) {
	r := e.begin(answerSection)
	e.owner()
	d := e.typ(typeSRV, ttl)
	e.u16(0)
	e.u16(w)
	e.u16(uint16(port))
	e.target(z, f, host)
	e.end(r, d)
}

// srvWeight is CoreDNS's weight for n records of equal priority.
func srvWeight(n int) uint16 {
	if n <= 0 {
		return 100
	}
	w := 100 / n
	if w == 0 {
		w = 1
	}
	return uint16(w)
}

func (h *Handler) srv(e *encoder, z *zone, f *found) {
	svc, rd, ttl := f.svc, f.rd, h.opts.TTL
	if svc.Type == index.ExternalName {
		return
	}
	if svc.Type == index.ClusterIP && rd.Form != names.EndpointName {
		n := 0
		for i := range svc.Ports {
			if portMatch(rd, &svc.Ports[i]) {
				n += len(svc.ClusterIPs)
			}
		}
		w := srvWeight(n)
		wrote := false
		for i := range svc.Ports {
			p := &svc.Ports[i]
			if p.Port == index.NoPort || !portMatch(rd, p) || len(svc.ClusterIPs) == 0 || dupPort(svc.Ports[:i], rd, p.Port) {
				continue
			}
			e.srv(z, f, ttl, w, p.Port, "")
			wrote = true
		}
		if wrote {
			for _, a := range svc.ClusterIPs {
				r := e.begin(extraSection)
				e.target(z, f, "")
				e.addr(r, a, ttl)
			}
		}
		return
	}
	n := 0
	for i := range svc.Endpoints {
		ep := &svc.Endpoints[i]
		if rd.Form == names.EndpointName && ep.Host != string(rd.Endpoint) {
			continue
		}
		for j := range ep.Ports {
			if portMatch(rd, &ep.Ports[j]) {
				n++
			}
		}
	}
	w := srvWeight(n)
	for i := range svc.Endpoints {
		ep := &svc.Endpoints[i]
		if rd.Form == names.EndpointName && ep.Host != string(rd.Endpoint) {
			continue
		}
		for j := range ep.Ports {
			p := &ep.Ports[j]
			if p.Port == index.NoPort || !portMatch(rd, p) || dupEndpointPort(svc, i, j, rd) {
				continue
			}
			e.srv(z, f, ttl, w, p.Port, ep.Host)
		}
	}
	for i := range svc.Endpoints {
		ep := &svc.Endpoints[i]
		if rd.Form == names.EndpointName && ep.Host != string(rd.Endpoint) {
			continue
		}
		if !hasSRVPort(rd, ep.Ports) || dupEndpointAddr(svc, i, rd) {
			continue
		}
		r := e.begin(extraSection)
		e.target(z, f, ep.Host)
		e.addr(r, ep.Addr, ttl)
	}
}

func hasSRVPort(rd *names.Reading, ports []index.Port) bool {
	for i := range ports {
		if ports[i].Port != index.NoPort && portMatch(rd, &ports[i]) {
			return true
		}
	}
	return false
}

func dupPort(prev []index.Port, rd *names.Reading, port int32) bool {
	for i := range prev {
		if prev[i].Port == port && portMatch(rd, &prev[i]) {
			return true
		}
	}
	return false
}

// dupEndpointPort reports whether an earlier endpoint with the same host
// already produced an SRV record for the same port (same target and port).
func dupEndpointPort(svc *index.ServiceView, i, j int, rd *names.Reading) bool {
	ep := &svc.Endpoints[i]
	port := ep.Ports[j].Port
	if dupPort(ep.Ports[:j], rd, port) {
		return true
	}
	for k := 0; k < i; k++ {
		o := &svc.Endpoints[k]
		if o.Host != ep.Host || (rd.Form == names.EndpointName && o.Host != string(rd.Endpoint)) {
			continue
		}
		if dupPort(o.Ports, rd, port) && hasSRVPort(rd, o.Ports) {
			return true
		}
	}
	return false
}

func dupEndpointAddr(svc *index.ServiceView, i int, rd *names.Reading) bool {
	ep := &svc.Endpoints[i]
	for k := 0; k < i; k++ {
		o := &svc.Endpoints[k]
		if o.Host == ep.Host && o.Addr == ep.Addr && hasSRVPort(rd, o.Ports) {
			return true
		}
	}
	return false
}

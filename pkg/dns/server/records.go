package server

import (
	"net/netip"
	"strings"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/names"
)

// nameRecords adds the answer records of a found name, in zone z, for
// qtype. An ExternalName's are its CNAME, whose target the resolver
// follows (st.cname).
func (h *Handler) nameRecords(st *state, z *zone, rd *names.Reading, f *found, qtype uint16) {
	switch rd.Form {
	case names.TenantOnly, names.NamespaceOnly:
		return
	case names.PodName:
		if (qtype == dns.TypeA && f.pod.Is4()) || (qtype == dns.TypeAAAA && f.pod.Is6()) {
			h.addAddr(st, f.pod)
		}
		return
	}
	svc := f.svc
	switch qtype {
	case dns.TypeA, dns.TypeAAAA:
		switch {
		case svc.Type == index.ExternalName:
			h.add(st, record{kind: rrCNAME, ttl: h.opts.TTL, text: svc.ExternalName()})
			st.cname = svc.ExternalName()
		case svc.Type == index.Headless || rd.Form == names.EndpointName:
			h.endpointAddrs(st, rd, f.svc, qtype == dns.TypeAAAA)
		default:
			for _, a := range svc.ClusterIPs() {
				if a.Is6() == (qtype == dns.TypeAAAA) {
					h.addAddr(st, a)
				}
			}
		}
	case dns.TypeCNAME:
		if svc.Type == index.ExternalName {
			h.add(st, record{kind: rrCNAME, ttl: h.opts.TTL, text: svc.ExternalName()})
		}
	case dns.TypeSRV:
		if svc.Type == index.ClusterIP && rd.Form != names.EndpointName {
			h.clusterIPSRV(st, z, rd, f)
		} else if svc.Type != index.ExternalName {
			h.endpointSRV(st, z, rd, f)
		}
	}
}

// addAddr adds an A or AAAA answer for a.
func (h *Handler) addAddr(st *state, a netip.Addr) {
	r := st.next()
	r.kind, r.ttl, r.addr = rrAddr, h.opts.TTL, a
}

// endpointAddrs adds the addresses of a headless service's endpoints, or
// of the endpoints an endpoint or port name selects.
func (h *Handler) endpointAddrs(st *state, rd *names.Reading, svc *index.ServiceView, want6 bool) {
	if rd.Form != names.EndpointName && len(rd.Port) == 0 && len(rd.Protocol) == 0 {
		for i, n := 0, svc.AddrCount(); i < n; i++ {
			if a := svc.Addr(i); a.Is6() == want6 {
				h.addAddr(st, a)
			}
		}
		return
	}
	for i := range svc.Endpoints {
		ep := &svc.Endpoints[i]
		if ep.Addr().Is6() != want6 || !endpointMatch(rd, ep) || seenAddr(svc, i, rd) {
			continue
		}
		h.addAddr(st, ep.Addr())
	}
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

func endpointMatch(rd *names.Reading, ep *index.EndpointView) bool {
	if rd.Form == names.EndpointName && !ep.HostIs(rd.Endpoint) {
		return false
	}
	return anyPort(rd, ep.Ports())
}

// seenAddr reports whether an earlier matching endpoint has the address of
// endpoint i (the same address can be in two slices).
func seenAddr(svc *index.ServiceView, i int, rd *names.Reading) bool {
	for j := 0; j < i; j++ {
		if svc.Endpoints[j].Addr() == svc.Endpoints[i].Addr() && endpointMatch(rd, &svc.Endpoints[j]) {
			return true
		}
	}
	return false
}

// targetOf is "[host.]svc.ns[.tenant].svc.<zone>" for a found service, in
// the form of the query: legacy names get legacy targets.
func targetOf(z *zone, rd *names.Reading, f *found, host *index.EndpointView) serviceName {
	return serviceName{host: host, service: &f.svc.ServiceSpec, namespace: f.ns.ID, legacy: rd.Legacy, zone: z}
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

// clusterIPSRV adds the SRV records of a ClusterIP service, one per
// matching port, with its cluster IPs as additional records.
func (h *Handler) clusterIPSRV(st *state, z *zone, rd *names.Reading, f *found) {
	svc, ttl := f.svc, h.opts.TTL
	n := 0
	for i := range svc.Ports() {
		if portMatch(rd, &svc.Ports()[i]) {
			n += len(svc.ClusterIPs())
		}
	}
	w := srvWeight(n)
	target := targetOf(z, rd, f, nil)
	wrote := false
	for i := range svc.Ports() {
		p := &svc.Ports()[i]
		if p.Port == index.NoPort || !portMatch(rd, p) || len(svc.ClusterIPs()) == 0 || dupPort(svc.Ports()[:i], rd, p.Port) {
			continue
		}
		h.add(st, record{kind: rrSRV, ttl: ttl, weight: w, port: uint16(p.Port), target: target})
		wrote = true
	}
	if wrote {
		for _, a := range svc.ClusterIPs() {
			h.add(st, record{kind: rrAddr, section: extraSection, owner: ownerTarget, ttl: ttl, addr: a, target: target})
		}
	}
}

// endpointSRV adds the SRV records of a headless service or an endpoint
// name, one per endpoint host and matching port, with the endpoints'
// addresses as additional records.
func (h *Handler) endpointSRV(st *state, z *zone, rd *names.Reading, f *found) {
	svc, ttl := f.svc, h.opts.TTL
	selected := func(ep *index.EndpointView) bool {
		return rd.Form != names.EndpointName || ep.HostIs(rd.Endpoint)
	}
	n := 0
	for i := range svc.Endpoints {
		ep := &svc.Endpoints[i]
		if !selected(ep) {
			continue
		}
		for j := range ep.Ports() {
			if portMatch(rd, &ep.Ports()[j]) {
				n++
			}
		}
	}
	w := srvWeight(n)
	for i := range svc.Endpoints {
		ep := &svc.Endpoints[i]
		if !selected(ep) {
			continue
		}
		for j := range ep.Ports() {
			p := &ep.Ports()[j]
			if p.Port == index.NoPort || !portMatch(rd, p) || dupEndpointPort(svc, i, j, rd) {
				continue
			}
			h.add(st, record{kind: rrSRV, ttl: ttl, weight: w, port: uint16(p.Port), target: targetOf(z, rd, f, ep)})
		}
	}
	for i := range svc.Endpoints {
		ep := &svc.Endpoints[i]
		if !selected(ep) || !hasSRVPort(rd, ep.Ports()) || dupEndpointAddr(svc, i, rd) {
			continue
		}
		h.add(st, record{kind: rrAddr, section: extraSection, owner: ownerTarget, ttl: ttl, addr: ep.Addr(), target: targetOf(z, rd, f, ep)})
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
	port := ep.Ports()[j].Port
	if dupPort(ep.Ports()[:j], rd, port) {
		return true
	}
	for k := 0; k < i; k++ {
		o := &svc.Endpoints[k]
		if !o.SameHost(ep) || (rd.Form == names.EndpointName && !o.HostIs(rd.Endpoint)) {
			continue
		}
		if dupPort(o.Ports(), rd, port) && hasSRVPort(rd, o.Ports()) {
			return true
		}
	}
	return false
}

func dupEndpointAddr(svc *index.ServiceView, i int, rd *names.Reading) bool {
	ep := &svc.Endpoints[i]
	for k := 0; k < i; k++ {
		o := &svc.Endpoints[k]
		if o.Addr() == ep.Addr() && o.SameHost(ep) && hasSRVPort(rd, o.Ports()) {
			return true
		}
	}
	return false
}

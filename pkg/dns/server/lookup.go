package server

import (
	"net/netip"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/dns/names"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// lookupName adds the records of type qtype of a name below a forward zone
// z (its labels in st.labels): a service, endpoint, pod, namespace or
// tenant name, or dns-version and ns.dns. It says whether the name exists;
// the resolver decides the rest (conclude). question is false for the
// target of a CNAME, which does not say which partition answered.
func (h *Handler) lookupName(st *state, z *zone, qtype uint16, question bool) verdict {
	req := names.Parse(st.labels[:st.nl-z.nlabels])
	switch req.Kind {
	case names.Invalid:
		return missing
	case names.Apex:
		return exists
	case names.DNSVersion, names.NameServer:
		return h.special(st, req.Kind, qtype)
	}
	var f found
	rd, ok := h.lookup(st, &req, &f)
	if !ok {
		return missing
	}
	if question && rd.Form != names.TenantOnly {
		st.res.answeredBy(f.tp)
	}
	h.nameRecords(st, z, rd, &f, qtype)
	return exists
}

// found is what a reading of a name found (see find).
type found struct {
	tp  int
	ns  *index.NamespaceView
	svc *index.ServiceView
	pod netip.Addr
}

var systemTenant = []byte(tenancy.SystemTenant)

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
		// Another partition holds the name too (the index marks it when it
		// publishes): a known querier there would get another answer.
		if system && !st.who.known && svc.Shared() {
			st.res.unsure = true
		}
		return hasRecords(svc, rd)
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

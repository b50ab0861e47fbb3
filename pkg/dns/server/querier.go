package server

import (
	"net/netip"

	"github.com/tpkit-dev/tpkit/pkg/dns/index"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// querier is who asks: its address and, once the resolver needs it, what
// the index says of it. Looking it up costs the fast path about 10%
// (measured with BenchmarkLookupLegacyA), so it is done only for names
// whose answer depends on it.
type querier struct {
	addr   netip.Addr
	source index.Source
	known  bool
	looked bool
}

// identify looks the querier up in snap, once: an unknown source counts
// as one in the system partition.
func (h *Handler) identify(q *querier, snap *index.Snapshot) {
	if q.looked {
		return
	}
	q.source, q.known = snap.Source(q.addr)
	if !q.known {
		q.source = index.Source{TP: h.opts.SystemPartition}
	}
	q.looked = true
}

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

// ptrVisible reports whether the querier may see the owner o of an
// address: a system-tenant owner always, a regular tenant's in its home
// partition only, and as isolation allows.
func (h *Handler) ptrVisible(snap *index.Snapshot, o *index.PTR, who *querier) bool {
	if o.Tenant == tenancy.SystemTenant {
		return true
	}
	if home, ok := snap.Home([]byte(o.Tenant)); !ok || home != o.TP {
		return false
	}
	return h.allowed([]byte(o.Tenant), who)
}

package server

import "github.com/tpkit-dev/tpkit/pkg/dns/names"

// zone is a served zone.
type zone struct {
	name    string
	wire    []byte // lowercase, with the root label
	nlabels int
	reverse bool
	// slot is the zone's metrics slot: 1 + its index (0 is names outside
	// the zones).
	slot int
}

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

// targetZone reads target into st.lw and st.offs and returns the served
// forward zone that holds it. A reverse zone holds no address records, so
// a target there goes upstream, as CoreDNS's would.
func (h *Handler) targetZone(st *state, target string) (*zone, bool) {
	n := names.FromDotted(st.lw[:], target)
	if n < 0 {
		return nil, false
	}
	if st.nl = names.Split(st.lw[:n], st.offs[:]); st.nl < 0 {
		return nil, false
	}
	z, ok := h.zoneOf(st.lw[:n], st.offs[:st.nl])
	if !ok || z.reverse {
		return nil, false
	}
	return z, true
}

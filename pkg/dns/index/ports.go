package index

import (
	"encoding/binary"
	"strings"
	"unsafe"
	"weak"
)

// portTable shares identical port lists between records: the services of a
// cluster mostly have one of a few lists (one port "http" TCP 80, say), and
// a list with its strings is ~70 bytes a record. Entries are weak, so a list
// no record uses any more is collected; dead entries are swept as the table
// grows. Not safe for concurrent use: the Builder's mutex guards it.
type portTable struct {
	m    map[string]portEntry
	live int // entries after the last sweep
	key  []byte
	none endpointMeta // the endpoint meta of no ports
}

// portEntry is an interned list, weakly: its elements (which services keep,
// as a []Port) and a header for them (which endpoint views keep, by
// pointer). A header that went while its elements stayed is made again.
type portEntry struct {
	first weak.Pointer[Port]
	hdr   weak.Pointer[[]Port]
	n     int
	// meta is the endpoint meta of the list without a hostname, which
	// holds hdr.
	meta weak.Pointer[endpointMeta]
}

// intern returns a list equal to ps, shared when one is already in use;
// nil for an empty one.
func (t *portTable) intern(ps []Port) *[]Port {
	if len(ps) == 0 {
		return nil
	}
	k := t.key[:0]
	for _, p := range ps { // length-prefixed, so no two lists share a key
		k = binary.AppendUvarint(k, uint64(len(p.Name)))
		k = append(k, p.Name...)
		k = binary.AppendUvarint(k, uint64(len(p.Protocol)))
		k = append(k, p.Protocol...)
		k = binary.LittleEndian.AppendUint32(k, uint32(p.Port))
	}
	t.key = k
	if e, ok := t.m[string(k)]; ok {
		if l := e.hdr.Value(); l != nil {
			return l
		}
		if first := e.first.Value(); first != nil {
			l := unsafe.Slice(first, e.n) // the first of n Ports of one allocation
			e.hdr = weak.Make(&l)
			t.m[string(k)] = e
			return &l
		}
	}
	if t.m == nil {
		t.m = map[string]portEntry{}
	}
	if len(t.m) >= 2*t.live+64 {
		for key, e := range t.m {
			if e.first.Value() == nil {
				delete(t.m, key)
			}
		}
		t.live = len(t.m)
	}
	own := make([]Port, len(ps))
	for i, p := range ps {
		// Own copies: the caller's strings may pin decoded objects' memory.
		own[i] = Port{Name: strings.Clone(p.Name), Protocol: strings.Clone(p.Protocol), Port: p.Port}
	}
	t.m[string(k)] = portEntry{first: weak.Make(&own[0]), hdr: weak.Make(&own), n: len(own)}
	return &own
}

// meta returns the endpoint meta of ports ps and no hostname, shared by
// every endpoint of an equal list.
func (t *portTable) meta(ps []Port) *endpointMeta {
	l := t.intern(ps) // t.key is ps's key now
	if l == nil {
		return &t.none
	}
	e := t.m[string(t.key)]
	if m := e.meta.Value(); m != nil && m.ports == l {
		return m
	}
	m := &endpointMeta{ports: l}
	e.meta = weak.Make(m)
	t.m[string(t.key)] = e
	return m
}

// derefPorts is the list an interned pointer holds, or nil.
func derefPorts(p *[]Port) []Port {
	if p == nil {
		return nil
	}
	return *p
}

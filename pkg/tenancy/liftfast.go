package tenancy

import (
	"bytes"
	"sort"
)

// liftFast is LiftTenant's fast path: one scan over the bytes that edits the
// metadata of the top-level object, of each item of a list, and of a watch
// event's object, without decoding anything into maps. It copies the input
// once. It reports false for anything unusual (malformed JSON, a tenant that is
// not a non-empty string, annotations that are not an object, a repeated
// key), and the caller then takes the decoding path, which gives the same
// result or a clear error. FuzzLiftFastMatchesSlow holds the two together.
func liftFast(raw []byte) ([]byte, bool) {
	s := scanner{b: raw}
	i := s.ws(0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	ok := s.members(i, func(key []byte, vs, ve int) bool {
		switch string(key) {
		case `"metadata"`:
			return s.metadata(vs, ve)
		case `"object"`:
			return s.objectMetadata(vs, ve)
		case `"items"`:
			return s.items(vs, ve)
		}
		return true
	})
	if !ok {
		return nil, false
	}
	if len(s.edits) == 0 {
		return raw, true
	}
	sort.Slice(s.edits, func(a, b int) bool { return s.edits[a].at < s.edits[b].at })
	n := len(raw)
	for _, e := range s.edits {
		n += len(e.insert) - (e.end - e.at)
	}
	out := make([]byte, 0, n)
	prev := 0
	for _, e := range s.edits {
		if e.at < prev {
			return nil, false
		}
		out = append(out, raw[prev:e.at]...)
		out = append(out, e.insert...)
		prev = e.end
	}
	return append(out, raw[prev:]...), true
}

// edit replaces raw[at:end] with insert.
type edit struct {
	at, end int
	insert  []byte
}

type scanner struct {
	b     []byte
	edits []edit
}

func (s *scanner) ws(i int) int {
	for i < len(s.b) && (s.b[i] == ' ' || s.b[i] == '\n' || s.b[i] == '\t' || s.b[i] == '\r') {
		i++
	}
	return i
}

// str returns the index just past the string starting at i.
func (s *scanner) str(i int) (int, bool) {
	if i >= len(s.b) || s.b[i] != '"' {
		return 0, false
	}
	for i++; i < len(s.b); i++ {
		switch s.b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// value returns the index just past the JSON value starting at i.
func (s *scanner) value(i int) (int, bool) {
	if i >= len(s.b) {
		return 0, false
	}
	switch s.b[i] {
	case '"':
		return s.str(i)
	case '{', '[':
		depth := 0
		for ; i < len(s.b); i++ {
			switch s.b[i] {
			case '"':
				end, ok := s.str(i)
				if !ok {
					return 0, false
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
		}
		return 0, false
	default:
		start := i
		for i < len(s.b) && !bytes.ContainsRune([]byte(",}] \n\t\r"), rune(s.b[i])) {
			i++
		}
		return i, i > start
	}
}

// members calls f for each member of the object at i, with the raw key and
// the value's span, and checks the object's shape on the way.
func (s *scanner) members(i int, f func(key []byte, vs, ve int) bool) bool {
	if i >= len(s.b) || s.b[i] != '{' {
		return false
	}
	i = s.ws(i + 1)
	if i < len(s.b) && s.b[i] == '}' {
		return true
	}
	for {
		ks := i
		ke, ok := s.str(i)
		if !ok {
			return false
		}
		i = s.ws(ke)
		if i >= len(s.b) || s.b[i] != ':' {
			return false
		}
		vs := s.ws(i + 1)
		ve, ok := s.value(vs)
		if !ok || !f(s.b[ks:ke], vs, ve) {
			return false
		}
		i = s.ws(ve)
		if i >= len(s.b) {
			return false
		}
		switch s.b[i] {
		case ',':
			i = s.ws(i + 1)
		case '}':
			return true
		default:
			return false
		}
	}
}

func (s *scanner) objectMetadata(vs, ve int) bool {
	if s.b[vs] != '{' {
		return true
	}
	return s.members(vs, func(key []byte, ms, me int) bool {
		if string(key) == `"metadata"` {
			return s.metadata(ms, me)
		}
		return true
	})
}

func (s *scanner) items(vs, ve int) bool {
	if s.b[vs] != '[' {
		return true
	}
	i := s.ws(vs + 1)
	if i < ve && s.b[i] == ']' {
		return true
	}
	for {
		end, ok := s.value(i)
		if !ok || !s.objectMetadata(i, end) {
			return false
		}
		i = s.ws(end)
		if i >= len(s.b) {
			return false
		}
		switch s.b[i] {
		case ',':
			i = s.ws(i + 1)
		case ']':
			return true
		default:
			return false
		}
	}
}

// metadata plans the edits for one metadata object: the tenant member goes,
// and its value joins the annotations.
func (s *scanner) metadata(vs, ve int) bool {
	if s.b[vs] != '{' {
		return true
	}
	tenantKS, tenantVS, tenantVE := -1, -1, -1
	annVS, annVE := -1, -1
	prevEnd := vs + 1 // just past '{' or the previous member's value
	var tenantFrom, tenantTo int
	ok := s.members(vs, func(key []byte, ms, me int) bool {
		ks := s.keyStart(prevEnd)
		switch string(key) {
		case `"tenant"`:
			if tenantKS >= 0 {
				return false
			}
			tenantKS, tenantVS, tenantVE = ks, ms, me
			tenantFrom, tenantTo = prevEnd, me // includes the comma before it, if any
		case `"annotations"`:
			if annVS >= 0 {
				return false
			}
			annVS, annVE = ms, me
		}
		prevEnd = me
		return true
	})
	if !ok || tenantKS < 0 {
		return ok
	}
	tenant := s.b[tenantVS:tenantVE]
	if len(tenant) < 3 || tenant[0] != '"' { // not a non-empty string
		return false
	}
	entry := make([]byte, 0, len(TenantAnnotation)+len(tenant)+3)
	entry = append(entry, '"')
	entry = append(entry, TenantAnnotation...)
	entry = append(entry, '"', ':')
	entry = append(entry, tenant...)
	if annVS < 0 {
		// Replace the tenant member in place: the commas around it stay valid.
		ins := make([]byte, 0, len(entry)+16)
		ins = append(ins, `"annotations":{`...)
		ins = append(ins, entry...)
		ins = append(ins, '}')
		s.edits = append(s.edits, edit{at: tenantKS, end: tenantVE, insert: ins})
		return true
	}
	if s.b[annVS] != '{' || bytes.Contains(s.b[annVS:annVE], []byte(TenantAnnotation)) {
		return false
	}
	// Remove the tenant member with the comma before it; when it is the first
	// member, remove the comma after it instead.
	if s.b[s.ws(tenantFrom)] == '"' { // first member: no comma before
		after := s.ws(tenantTo)
		if s.b[after] == ',' {
			tenantTo = after + 1
		}
	}
	s.edits = append(s.edits, edit{at: tenantFrom, end: tenantTo})
	if s.b[s.ws(annVS+1)] != '}' {
		entry = append(entry, ',')
	}
	s.edits = append(s.edits, edit{at: annVS + 1, end: annVS + 1, insert: entry})
	return true
}

// keyStart finds the opening quote of the member key that follows prevEnd.
func (s *scanner) keyStart(prevEnd int) int {
	i := s.ws(prevEnd)
	if i < len(s.b) && s.b[i] == ',' {
		i = s.ws(i + 1)
	}
	return i
}

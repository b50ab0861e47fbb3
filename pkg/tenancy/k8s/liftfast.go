package k8s

import (
	"bytes"
	"sort"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
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
	// Each byte is scanned once: a member's value is walked by the function
	// that understands it (metadata, object, items) or skipped by value.
	_, ok := s.members(i, func(key []byte, vs int) (int, bool) {
		switch string(key) {
		case `"metadata"`:
			return s.metadata(vs)
		case `"object"`:
			return s.objectMetadata(vs)
		case `"items"`:
			return s.items(vs)
		}
		return s.value(vs)
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
		n += s.insertLen(e) - (e.end - e.at)
	}
	out := make([]byte, 0, n)
	prev := 0
	for _, e := range s.edits {
		if e.at < prev {
			return nil, false
		}
		out = append(out, raw[prev:e.at]...)
		out = s.appendInsert(out, e)
		prev = e.end
	}
	return append(out, raw[prev:]...), true
}

// edit replaces raw[at:end] with what form says, built from the tenant value
// raw[tvs:tve] when there is one. Building the text only while copying keeps
// the scan free of allocations but for the edits slice.
type edit struct {
	at, end  int
	tvs, tve int
	form     editForm
}

type editForm uint8

const (
	removeOnly           editForm = iota // nothing inserted
	newAnnotations                       // "annotations":{"<tenancy.TenantAnnotation>":<tenant>}
	intoAnnotations                      // "<tenancy.TenantAnnotation>":<tenant>
	intoAnnotationsComma                 // "<tenancy.TenantAnnotation>":<tenant>,
)

func (s *scanner) insertLen(e edit) int {
	entry := len(tenancy.TenantAnnotation) + 3 + (e.tve - e.tvs)
	switch e.form {
	case newAnnotations:
		return len(`"annotations":{}`) + entry
	case intoAnnotations:
		return entry
	case intoAnnotationsComma:
		return entry + 1
	}
	return 0
}

func (s *scanner) appendInsert(out []byte, e edit) []byte {
	if e.form == removeOnly {
		return out
	}
	if e.form == newAnnotations {
		out = append(out, `"annotations":{`...)
	}
	out = append(out, '"')
	out = append(out, tenancy.TenantAnnotation...)
	out = append(out, '"', ':')
	out = append(out, s.b[e.tvs:e.tve]...)
	switch e.form {
	case newAnnotations:
		out = append(out, '}')
	case intoAnnotationsComma:
		out = append(out, ',')
	}
	return out
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
	literal:
		for ; i < len(s.b); i++ {
			switch s.b[i] {
			case ',', '}', ']', ' ', '\n', '\t', '\r':
				break literal
			}
		}
		return i, i > start
	}
}

// members calls f for each member of the object at i, with the raw key and
// the start of the value; f returns the index just past the value. members
// checks the object's shape on the way and returns the index just past it.
func (s *scanner) members(i int, f func(key []byte, vs int) (int, bool)) (int, bool) {
	if i >= len(s.b) || s.b[i] != '{' {
		return 0, false
	}
	i = s.ws(i + 1)
	if i < len(s.b) && s.b[i] == '}' {
		return i + 1, true
	}
	for {
		ks := i
		ke, ok := s.str(i)
		if !ok {
			return 0, false
		}
		i = s.ws(ke)
		if i >= len(s.b) || s.b[i] != ':' {
			return 0, false
		}
		ve, ok := f(s.b[ks:ke], s.ws(i+1))
		if !ok {
			return 0, false
		}
		i = s.ws(ve)
		if i >= len(s.b) {
			return 0, false
		}
		switch s.b[i] {
		case ',':
			i = s.ws(i + 1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// objectMetadata plans the edits for the metadata of the value at vs, when
// that value is an object, and returns the index just past the value.
func (s *scanner) objectMetadata(vs int) (int, bool) {
	if vs >= len(s.b) || s.b[vs] != '{' {
		return s.value(vs)
	}
	return s.members(vs, func(key []byte, ms int) (int, bool) {
		if string(key) == `"metadata"` {
			return s.metadata(ms)
		}
		return s.value(ms)
	})
}

// items plans the edits for each item of the value at vs, when that value is
// an array, and returns the index just past the value.
func (s *scanner) items(vs int) (int, bool) {
	if vs >= len(s.b) || s.b[vs] != '[' {
		return s.value(vs)
	}
	i := s.ws(vs + 1)
	if i < len(s.b) && s.b[i] == ']' {
		return i + 1, true
	}
	for {
		end, ok := s.objectMetadata(i)
		if !ok {
			return 0, false
		}
		i = s.ws(end)
		if i >= len(s.b) {
			return 0, false
		}
		switch s.b[i] {
		case ',':
			i = s.ws(i + 1)
		case ']':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// metadata plans the edits for the value at vs, when it is an object: the
// tenant member goes, and its value joins the annotations. It returns the
// index just past the value.
func (s *scanner) metadata(vs int) (int, bool) {
	if vs >= len(s.b) || s.b[vs] != '{' {
		return s.value(vs)
	}
	tenantKS, tenantVS, tenantVE := -1, -1, -1
	annVS, annVE := -1, -1
	prevEnd := vs + 1 // just past '{' or the previous member's value
	var tenantFrom, tenantTo int
	end, ok := s.members(vs, func(key []byte, ms int) (int, bool) {
		me, ok := s.value(ms)
		if !ok {
			return 0, false
		}
		ks := s.keyStart(prevEnd)
		switch string(key) {
		case `"tenant"`:
			if tenantKS >= 0 {
				return 0, false
			}
			tenantKS, tenantVS, tenantVE = ks, ms, me
			tenantFrom, tenantTo = prevEnd, me // includes the comma before it, if any
		case `"annotations"`:
			if annVS >= 0 {
				return 0, false
			}
			annVS, annVE = ms, me
		}
		prevEnd = me
		return me, true
	})
	if !ok || tenantKS < 0 {
		return end, ok
	}
	tenant := s.b[tenantVS:tenantVE]
	if len(tenant) < 3 || tenant[0] != '"' { // not a non-empty string
		return 0, false
	}
	if annVS < 0 {
		// Replace the tenant member in place: the commas around it stay valid.
		s.edits = append(s.edits, edit{at: tenantKS, end: tenantVE, tvs: tenantVS, tve: tenantVE, form: newAnnotations})
		return end, true
	}
	if s.b[annVS] != '{' || bytes.Contains(s.b[annVS:annVE], []byte(tenancy.TenantAnnotation)) {
		return 0, false
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
	form := intoAnnotations
	if s.b[s.ws(annVS+1)] != '}' {
		form = intoAnnotationsComma
	}
	s.edits = append(s.edits, edit{at: annVS + 1, end: annVS + 1, tvs: tenantVS, tve: tenantVE, form: form})
	return end, true
}

// keyStart finds the opening quote of the member key that follows prevEnd.
func (s *scanner) keyStart(prevEnd int) int {
	i := s.ws(prevEnd)
	if i < len(s.b) && s.b[i] == ',' {
		i = s.ws(i + 1)
	}
	return i
}

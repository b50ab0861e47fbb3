package source

import (
	"math"

	kjson "sigs.k8s.io/json"
)

// scanner reads a list page's JSON without reflection: the page decoders
// (pagescan.go) walk the few fields they read and skip the rest, checking
// every byte they skip as encoding/json would. It takes only what it reads
// exactly as sigs.k8s.io/json reads it: anything else (a syntax error, a
// value of the wrong type, a key given twice, a key with an escape, a
// nesting deeper than encoding/json's limit) sets bad, and the caller
// decodes the page again with sigs.k8s.io/json, which then gives the
// answer, or the error, that the page always had. So the scanner never
// makes an error of its own, and a page it accepts decodes to what
// sigs.k8s.io/json would have made of it (FuzzPodPage checks both).
type scanner struct {
	b     []byte
	i     int
	bad   bool
	depth int
	// strs interns the strings that repeat across a page (namespaces,
	// tenants, phases, protocols): each is made once a page, not once an
	// object.
	strs map[string]string
}

// maxDepth is encoding/json's nesting limit: deeper input is an error
// there, so it goes back to it.
const maxDepth = 10000

func newScanner(b []byte) *scanner { return &scanner{b: b, strs: map[string]string{}} }

// fail marks the page as one the scanner does not take; every read after
// it is a no-op that returns zero values.
func (s *scanner) fail() { s.bad, s.i = true, len(s.b) }

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end reports whether only white space is left, as encoding/json wants
// after the top-level value.
func (s *scanner) end() bool { return s.peek() == 0 && s.i == len(s.b) && !s.bad }

// null consumes a null and reports whether there was one: a null leaves a
// field as it was, or makes a slice nil.
func (s *scanner) null() bool {
	if s.peek() != 'n' {
		return false
	}
	s.literal("null")
	return !s.bad
}

func (s *scanner) literal(lit string) {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		s.fail()
		return
	}
	s.i += len(lit)
}

// open consumes the opening byte of an object or array ('{' or '['). It
// returns false for a null, which leaves the value as it was, and fails on
// anything else: a value of the wrong type is an error in encoding/json.
func (s *scanner) open(c byte) bool {
	if s.null() {
		return false
	}
	if s.peek() != c {
		s.fail()
		return false
	}
	s.i++
	s.depth++
	if s.depth > maxDepth {
		s.fail()
		return false
	}
	return true
}

// more moves on to the next member of an object or element of an array
// that open began, or past its closing byte (then false). first is the
// loop's own: true before the first member.
func (s *scanner) more(closing byte, first *bool) bool {
	c := s.peek()
	if c == closing && *first {
		s.i++
		s.depth--
		return false
	}
	if !*first {
		switch c {
		case closing:
			s.i++
			s.depth--
			return false
		case ',':
			s.i++
		default:
			s.fail()
			return false
		}
	}
	*first = false
	return !s.bad
}

// key reads a member's key and its colon. A key with an escape fails:
// encoding/json unescapes keys before it matches them, and real pages
// have none.
func (s *scanner) key() []byte {
	if s.peek() != '"' {
		s.fail()
		return nil
	}
	start := s.i + 1
	j := start
	for ; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			break
		}
		if c == '\\' || c < 0x20 {
			s.fail()
			return nil
		}
	}
	if j >= len(s.b) {
		s.fail()
		return nil
	}
	k := s.b[start:j]
	s.i = j + 1
	if s.peek() != ':' {
		s.fail()
		return nil
	}
	s.i++
	return k
}

// once notes the field of bit in seen, and fails on a field given twice:
// encoding/json decodes a repeated object or array into what the first
// left there, which is not worth copying.
func (s *scanner) once(seen *uint32, bit uint32) {
	if *seen&bit != 0 {
		s.fail()
	}
	*seen |= bit
}

// strRaw consumes a string value and returns its bytes between the
// quotes, and whether they are plain (no escape, all ASCII) and so are
// the string itself.
func (s *scanner) strRaw() (raw []byte, plain bool) {
	if s.peek() != '"' {
		s.fail()
		return nil, false
	}
	start := s.i + 1
	plain = true
	j := start
	for j < len(s.b) {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], plain
		case c == '\\':
			plain = false
			if j+1 >= len(s.b) {
				s.fail()
				return nil, false
			}
			switch s.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(s.b) || !isHex4(s.b[j+2:j+6]) {
					s.fail()
					return nil, false
				}
				j += 6
			default:
				s.fail()
				return nil, false
			}
		case c < 0x20:
			s.fail()
			return nil, false
		default:
			if c >= 0x80 {
				plain = false
			}
			j++
		}
	}
	s.fail()
	return nil, false
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// str reads a string field: null leaves *dst as it was. A string with
// escapes or other than ASCII is unquoted by sigs.k8s.io/json itself, so
// that it reads exactly as there (invalid UTF-8, surrogates).
func (s *scanner) str(dst *string, intern bool) {
	if s.null() {
		return
	}
	start := s.i
	raw, plain := s.strRaw()
	switch {
	case s.bad:
	case !plain:
		var v string
		if err := kjson.UnmarshalCaseSensitivePreserveInts(s.b[start:s.i], &v); err != nil {
			s.fail()
			return
		}
		*dst = v
	case intern:
		*dst = s.intern(raw)
	default:
		*dst = string(raw)
	}
}

// intern returns b as a string, the same one for the same bytes within a
// page.
func (s *scanner) intern(b []byte) string {
	if v, ok := s.strs[string(b)]; ok { // no allocation for the lookup
		return v
	}
	v := string(b)
	s.strs[v] = v
	return v
}

// boolean reads a bool field; null leaves it as it was.
func (s *scanner) boolean(dst *bool) {
	switch s.peek() {
	case 'n':
		s.literal("null")
	case 't':
		s.literal("true")
		*dst = true
	case 'f':
		s.literal("false")
		*dst = false
	default:
		s.fail()
	}
}

// int32 reads an int32 field as encoding/json does: an integer in range,
// no fraction or exponent (those are errors there); null leaves it.
func (s *scanner) int32(dst *int32) {
	if s.null() {
		return
	}
	start := s.i
	s.number()
	if s.bad {
		return
	}
	var v int64
	neg := false
	for _, c := range s.b[start:s.i] {
		switch {
		case c == '-':
			neg = true
		case '0' <= c && c <= '9':
			v = v*10 + int64(c-'0')
			if v > math.MaxInt32+1 {
				s.fail()
				return
			}
		default: // a fraction or an exponent
			s.fail()
			return
		}
	}
	if neg {
		v = -v
	}
	if v > math.MaxInt32 || v < math.MinInt32 {
		s.fail()
		return
	}
	*dst = int32(v)
}

// number consumes a JSON number, checking its grammar.
func (s *scanner) number() {
	b, i := s.b, s.i
	digits := func() bool {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		s.fail()
		return
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			s.fail()
			return
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			s.fail()
			return
		}
	}
	s.i = i
}

// skip consumes any value, checking it.
func (s *scanner) skip() {
	switch s.peek() {
	case '{':
		s.open('{')
		for first := true; s.more('}', &first); {
			s.key()
			s.skip()
		}
	case '[':
		s.open('[')
		for first := true; s.more(']', &first); {
			s.skip()
		}
	case '"':
		s.strRaw()
	case 't':
		s.literal("true")
	case 'f':
		s.literal("false")
	case 'n':
		s.literal("null")
	default:
		s.number()
	}
}

package faketp

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// Templates make Generate fast: an object of a kind is prepared once, the
// way Seed prepares every object (prepareCreate: defaults, metadata, the
// index), with markers where objects differ (name, namespace, uid,
// addresses, ...); its JSON is then cut at the markers, and each generated
// object is the pieces joined with its own values. So a generated object
// is byte for byte what Seed would store for it, without Seed's decoding,
// defaulting and encoding of every object (TestGenerateAsSeeded compares
// the two).

// marks is the text around a slot's letter that makes its marker (see
// marker): valid in names, label values and DNS labels, so that it passes
// the checks prepareCreate makes, and found nowhere else in the object
// (chooseMarks).
type marks string

// marker is the text that stands for slot c.
func (m marks) marker(c byte) string { return string(m) + string(c) + string(m) }

// next finds the first marker in s (marks, a slot letter a-z, marks): its
// index and slot, or -1.
func (m marks) next(s string) (int, byte) {
	for off := 0; ; {
		i := strings.Index(s[off:], string(m))
		if i < 0 {
			return -1, 0
		}
		i += off
		end := i + len(m) + 1
		if end+len(m) <= len(s) && s[end:end+len(m)] == string(m) && s[end-1] >= 'a' && s[end-1] <= 'z' {
			return i, s[i+len(m)]
		}
		off = i + 1
	}
}

// chooseMarks picks marks that the text the generator puts into objects
// as it is (the tenant name) does not contain.
func chooseMarks(literal string) marks {
	for n := 9; ; n++ {
		m := marks("q" + strconv.Itoa(n) + "q")
		if !strings.Contains(literal, string(m)) {
			return m
		}
	}
}

// Slots: each is a value an object's JSON and index have in that place.
// rawSlots are written without quotes (numbers); the others are in strings.
const (
	slotName      = 'n'
	slotNamespace = 's'
	slotUID       = 'u'
	slotCreated   = 't'
	slotRV        = 'r'
	slotHashKey   = 'h'
	slotApp       = 'a' // a pod's app label, a service's selector
	slotNode      = 'b'
	slotPodIP     = 'p'
	slotClusterIP = 'c'
	slotValue     = 'v' // a configmap's value
	// An Endpoints' addresses (slotList, raw: a list of addresses made
	// from an address template), their pods' names, uids and versions,
	// and the Endpoints' trigger time (the service's creation).
	slotList    = 'l'
	slotPodName = 'o'
	slotPodUID  = 'd'
	slotPodRV   = 'e'
	slotTrigger = 'g'
)

var rawSlots = map[byte]bool{slotHashKey: true, slotList: true}

// slotValues are one generated object's values.
type slotValues struct {
	name, namespace, uid, created, rv, hashKey string
	app, node, podIP, clusterIP, value         string
	list, podName, podUID, podRV, trigger      string
}

// get is the value of slot c.
func (v *slotValues) get(c byte) string {
	switch c {
	case slotName:
		return v.name
	case slotNamespace:
		return v.namespace
	case slotUID:
		return v.uid
	case slotCreated:
		return v.created
	case slotRV:
		return v.rv
	case slotHashKey:
		return v.hashKey
	case slotApp:
		return v.app
	case slotNode:
		return v.node
	case slotPodIP:
		return v.podIP
	case slotClusterIP:
		return v.clusterIP
	case slotValue:
		return v.value
	case slotList:
		return v.list
	case slotPodName:
		return v.podName
	case slotPodUID:
		return v.podUID
	case slotPodRV:
		return v.podRV
	case slotTrigger:
		return v.trigger
	}
	return ""
}

// template is an object's JSON cut at its slots: parts[0], slot 0's value,
// parts[1], ...; and its index (labels and fields) with the same slots.
type template struct {
	parts  []string
	slots  []byte
	size   int
	labels map[string]string
	fields store.Fields
	marks  marks
}

// newTemplate cuts b, an encoded object with the markers of m, into a
// template.
func newTemplate(b []byte, meta store.Meta, m marks) (*template, error) {
	t := &template{labels: meta.Labels, fields: meta.Fields, marks: m}
	s := string(b)
	for {
		i, c := m.next(s)
		if i < 0 {
			t.parts = append(t.parts, s)
			break
		}
		head, rest := s[:i], s[i+2*len(m)+1:]
		if rawSlots[c] {
			if !strings.HasSuffix(head, `"`) || !strings.HasPrefix(rest, `"`) {
				return nil, fmt.Errorf("template: slot %c is not a whole string", c)
			}
			head, rest = head[:len(head)-1], rest[1:]
		}
		t.parts = append(t.parts, head)
		t.slots = append(t.slots, c)
		s = rest
	}
	for _, p := range t.parts {
		t.size += len(p)
	}
	return t, nil
}

// fill appends the object of values v to dst.
func (t *template) fill(dst []byte, v *slotValues) []byte {
	for i, c := range t.slots {
		dst = append(dst, t.parts[i]...)
		dst = append(dst, v.get(c)...)
	}
	return append(dst, t.parts[len(t.parts)-1]...)
}

// fillString replaces the markers of s with the values v; into, when not
// nil, holds the result (a pod's fields are kept for as long as the pod).
func (m marks) fillString(s string, v *slotValues, into *stringArena) string {
	n, rest, found := 0, s, false
	for {
		i, c := m.next(rest)
		if i < 0 {
			n += len(rest)
			break
		}
		found = true
		n += i + len(v.get(c))
		rest = rest[i+2*len(m)+1:]
	}
	if !found {
		return s
	}
	a := into
	if a == nil {
		a = &stringArena{}
		a.b.Grow(n)
	}
	a.start(n)
	for {
		i, c := m.next(s)
		if i < 0 {
			a.b.WriteString(s)
			return a.end()
		}
		a.b.WriteString(s[:i])
		a.b.WriteString(v.get(c))
		s = s[i+2*len(m)+1:]
	}
}

// stringArena holds the strings of generated objects that the store keeps
// (names, fields) in large blocks: millions of small strings are as many
// objects for the allocator and for every GC cycle to mark; a block is one.
// A string written is never changed; a block is freed once no string in it
// is kept.
type stringArena struct {
	b    strings.Builder
	from int
}

// stringBlock is the size of a block.
const stringBlock = 64 << 10

// start begins a string of n bytes, written to a.b, ended by end.
func (a *stringArena) start(n int) {
	if a.b.Cap()-a.b.Len() < n {
		a.b = strings.Builder{}
		a.b.Grow(max(n, stringBlock))
	}
	a.from = a.b.Len()
}

// end returns the string written since start.
func (a *stringArena) end() string { return a.b.String()[a.from:] }

// concat is prefix followed by the decimal n, in the arena.
func (a *stringArena) concat(prefix string, n int) string {
	var buf [20]byte
	d := strconv.AppendInt(buf[:0], int64(n), 10)
	a.start(len(prefix) + len(d))
	a.b.WriteString(prefix)
	a.b.Write(d)
	return a.end()
}

// makeTemplate prepares o (an object of t's resource, with markers) as
// prepareCreate prepares an object with options wo, and makes its
// template; the metadata prepareCreate makes per object (uid, hashKey,
// creationTimestamp) and the resourceVersion become slots. cut, if not
// nil, may change the encoded object before it is cut into a template.
func (tp *TP) makeTemplate(t target, o obj, wo writeOptions, m marks, cut func([]byte) ([]byte, error)) (*template, error) {
	t.namespace = m.marker(slotNamespace)
	if _, _, err := tp.prepareCreate(t, o, wo); err != nil {
		return nil, err
	}
	md := child(o, "metadata")
	md["uid"] = m.marker(slotUID)
	md["hashKey"] = m.marker(slotHashKey)
	md["creationTimestamp"] = m.marker(slotCreated)
	md["resourceVersion"] = m.marker(slotRV)
	meta := t.res.index(o)
	// As encoder writes objects: without kind and apiVersion.
	delete(o, "kind")
	delete(o, "apiVersion")
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	if cut != nil {
		if b, err = cut(b); err != nil {
			return nil, err
		}
	}
	return newTemplate(b, meta, m)
}

// labelSets shares equal label maps between generated objects (a
// service's pods all have its app label): the store never changes an
// object's index, and one map per set saves a map per object.
type labelSets map[string]map[string]string

// get is the label set of template labels filled with v.
func (s labelSets) get(t *template, v *slotValues) map[string]string {
	labels := t.labels
	if len(labels) == 0 {
		return nil
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(t.marks.fillString(labels[k], v, nil))
		b.WriteByte(0)
	}
	if shared, ok := s[b.String()]; ok {
		return shared
	}
	m := make(map[string]string, len(labels))
	for k, l := range labels {
		m[k] = t.marks.fillString(l, v, nil)
	}
	s[b.String()] = m
	return m
}

// arena hands out the JSON of generated objects from large blocks rather
// than one allocation each, which the allocator would round up to its size
// classes (a tenth more for a pod). An object's bytes are never changed;
// a block is freed once no object in it is stored.
type arena struct{ block []byte }

// arenaBlock is the size of a block.
const arenaBlock = 1 << 20

// alloc returns n bytes (length 0, capacity n).
func (a *arena) alloc(n int) []byte {
	if n > arenaBlock/8 {
		return make([]byte, 0, n)
	}
	if cap(a.block)-len(a.block) < n {
		a.block = make([]byte, 0, arenaBlock)
	}
	b := a.block[len(a.block) : len(a.block) : len(a.block)+n]
	a.block = a.block[:len(a.block)+n]
	return b
}

// len is the length of the template filled with v.
func (t *template) len(v *slotValues) int {
	n := t.size
	for _, c := range t.slots {
		n += len(v.get(c))
	}
	return n
}

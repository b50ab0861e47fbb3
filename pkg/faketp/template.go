package faketp

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tpkit-dev/tpkit/pkg/faketp/store"
)

// Templates make Generate fast: an object of a kind is prepared once, the
// way Seed prepares every object (prepareCreate: defaults, metadata, the
// index), with markers where objects differ (name, namespace, uid,
// addresses, ...); its JSON is then cut at the markers, and each generated
// object is the pieces joined with its own values. So a generated object
// is byte for byte what Seed would store for it, without Seed's decoding,
// defaulting and encoding of every object (TestGenerateAsSeeded compares
// the two).

// slotMarker is the text that stands for slot c: valid in names, label
// values and DNS labels, so that it passes the checks prepareCreate makes,
// and found nowhere else in an object.
func slotMarker(c byte) string { return "q9q" + string(c) + "q9q" }

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
}

// newTemplate cuts b, an encoded object with markers, into a template.
func newTemplate(b []byte, m store.Meta) (*template, error) {
	t := &template{labels: m.Labels, fields: m.Fields}
	s := string(b)
	for {
		i := strings.Index(s, "q9q")
		if i < 0 || i+7 > len(s) || s[i+4:i+7] != "q9q" {
			if strings.Contains(s, "q9q") {
				return nil, fmt.Errorf("template: a stray marker in %q", s)
			}
			t.parts = append(t.parts, s)
			break
		}
		c := s[i+3]
		head, rest := s[:i], s[i+7:]
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

// fillString replaces the markers of s with the values v, in a string of
// its exact size (a pod's fields are kept for as long as the pod).
func fillString(s string, v *slotValues) string {
	n, rest := 0, s
	for {
		i := strings.Index(rest, "q9q")
		if i < 0 || i+7 > len(rest) || rest[i+4:i+7] != "q9q" {
			n += len(rest)
			break
		}
		n += i + len(v.get(rest[i+3]))
		rest = rest[i+7:]
	}
	if n == len(s) && !strings.Contains(s, "q9q") {
		return s
	}
	var b strings.Builder
	b.Grow(n)
	for {
		i := strings.Index(s, "q9q")
		if i < 0 || i+7 > len(s) || s[i+4:i+7] != "q9q" {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(v.get(s[i+3]))
		s = s[i+7:]
	}
}

// makeTemplate prepares o (an object of t's resource, with markers) as
// prepareCreate prepares an object with options wo, and makes its
// template; the metadata prepareCreate makes per object (uid, hashKey,
// creationTimestamp) and the resourceVersion become slots. cut, if not
// nil, may change the encoded object before it is cut into a template.
func (tp *TP) makeTemplate(t target, o obj, wo writeOptions, cut func([]byte) ([]byte, error)) (*template, error) {
	t.namespace = slotMarker(slotNamespace)
	if _, _, err := tp.prepareCreate(t, o, wo); err != nil {
		return nil, err
	}
	md := child(o, "metadata")
	md["uid"] = slotMarker(slotUID)
	md["hashKey"] = slotMarker(slotHashKey)
	md["creationTimestamp"] = slotMarker(slotCreated)
	md["resourceVersion"] = slotMarker(slotRV)
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
	return newTemplate(b, meta)
}

// labelSets shares equal label maps between generated objects (a
// service's pods all have its app label): the store never changes an
// object's index, and one map per set saves a map per object.
type labelSets map[string]map[string]string

// get is the label set of template labels filled with v.
func (s labelSets) get(labels map[string]string, v *slotValues) map[string]string {
	if len(labels) == 0 {
		return nil
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(fillString(labels[k], v))
		b.WriteByte(0)
	}
	if shared, ok := s[b.String()]; ok {
		return shared
	}
	m := make(map[string]string, len(labels))
	for k, l := range labels {
		m[k] = fillString(l, v)
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

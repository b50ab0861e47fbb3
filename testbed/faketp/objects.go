package faketp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// obj is an object as fake-tp handles it: generic JSON, numbers kept exact.
type obj = map[string]any

// decodeObject parses one JSON object, keeping numbers as json.Number so
// that int64 fields survive the round trip.
func decodeObject(b []byte) (obj, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding JSON body: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decoding JSON body: more than one JSON value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the body must be a JSON object, not %s", jsonKind(v))
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// metadata returns o's metadata map, creating it when absent. It fails when
// metadata is present but not an object.
func metadata(o obj) (obj, error) {
	switch m := o["metadata"].(type) {
	case map[string]any:
		return m, nil
	case nil:
		n := obj{}
		o["metadata"] = n
		return n, nil
	default:
		return nil, fmt.Errorf("metadata must be an object, not %s", jsonKind(m))
	}
}

// str reads a string at path; "" when absent or not a string.
func str(o obj, path ...string) string {
	var cur any = o
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[p]
	}
	switch v := cur.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	}
	return ""
}

// child returns the map at o[k], or nil.
func child(o obj, k string) obj {
	m, _ := o[k].(map[string]any)
	return m
}

// stringMap reads a map[string]string field (labels, annotations). Values
// that are not strings fail: the typed check reports them first anyway.
func stringMap(o obj, k string) map[string]string {
	m, ok := o[k].(map[string]any)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// index computes what the store indexes about o.
func (r *resource) index(o obj) store.Meta {
	var m store.Meta
	if md := child(o, "metadata"); md != nil {
		m.Labels = stringMap(md, "labels")
	}
	var fields map[string]string
	for f, path := range r.fields {
		if v := str(o, path...); v != "" {
			if fields == nil {
				fields = make(map[string]string, len(r.fields))
			}
			fields[f] = v
		}
	}
	m.Fields = store.MakeFields(fields)
	return m
}

// indexData is store.Options.Index: it re-indexes stored JSON on load.
func indexData(k store.Key, data []byte) (store.Meta, error) {
	r := lookupStoreName(k.Resource)
	if r == nil {
		return store.Meta{}, fmt.Errorf("unknown resource %q", k.Resource)
	}
	o, err := decodeObject(data)
	if err != nil {
		return store.Meta{}, err
	}
	return r.index(o), nil
}

// encoder returns a store.Encode that writes rv into o and marshals it
// without kind and apiVersion: the store keeps objects as list items, as
// kube-apiserver serves them, and objectJSON adds the two for a single
// object. o is modified; callers pass a map they own.
func encoder(o obj) store.Encode {
	return func(rv uint64) ([]byte, error) {
		md, err := metadata(o)
		if err != nil {
			return nil, err
		}
		md["resourceVersion"] = strconv.FormatUint(rv, 10)
		kind, kok := o["kind"]
		av, aok := o["apiVersion"]
		delete(o, "kind")
		delete(o, "apiVersion")
		b, err := json.Marshal(o)
		if kok {
			o["kind"] = kind
		}
		if aok {
			o["apiVersion"] = av
		}
		return b, err
	}
}

// objectJSON is a stored object (a list item) as a single object: with its
// kind and apiVersion first, as kube-apiserver writes them.
func (r *resource) objectJSON(data []byte) []byte {
	if len(data) < 2 || data[0] != '{' {
		return data
	}
	head := `{"kind":"` + r.kind + `","apiVersion":"` + r.apiVersion() + `"`
	b := make([]byte, 0, len(head)+len(data))
	b = append(b, head...)
	if rest := bytes.TrimSpace(data[1:]); len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, data[1:]...)
}

// selfLink is the path of an object as Arktos writes it in
// metadata.selfLink: the short path for the system tenant, the tenant path
// for the others.
func (r *resource) selfLink(tenant, namespace, name string) string {
	p := "/api/" + r.gvr.Version + "/"
	if r.gvr.Group != "" {
		p = "/apis/" + r.gvr.Group + "/" + r.gvr.Version + "/"
	}
	if r.scope != scopeCluster && !tenancy.IsSystem(tenant) {
		p += "tenants/" + tenant + "/"
	}
	if r.scope == scopeNamespace {
		p += "namespaces/" + namespace + "/"
	}
	return p + r.gvr.Resource + "/" + name
}

// hashKey is Arktos's metadata.hashKey, a positive int64 that spreads
// objects over workers: fake-tp derives it from the uid, so it is stable.
func hashKey(uid string) json.Number {
	h := fnv.New64a()
	h.Write([]byte(uid))
	return json.Number(strconv.FormatUint(h.Sum64()&(1<<63-1), 10))
}

// typed decodes o into the resource's typed struct, which checks field
// types as kube-apiserver's decoder would. It returns nil for resources
// without a typed struct.
func (r *resource) typed(o obj, tenant string) (runtime.Object, error) {
	if r.newTyped == nil {
		return nil, nil
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	t := r.newTyped()
	if err := json.Unmarshal(b, t); err != nil {
		return nil, err
	}
	if r.scope != scopeCluster && tenant != "" {
		if m, ok := t.(interface {
			GetAnnotations() map[string]string
			SetAnnotations(map[string]string)
		}); ok {
			a := m.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[tenancy.TenantAnnotation] = tenant
			m.SetAnnotations(a)
		}
	}
	return t, nil
}

// deepCopy copies a JSON object tree.
func deepCopy(o obj) obj {
	return deepCopyValue(o).(map[string]any)
}

func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, v := range t {
			m[k] = deepCopyValue(v)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, v := range t {
			l[i] = deepCopyValue(v)
		}
		return l
	}
	return v
}

// protobufToJSON decodes a Kubernetes protobuf body of a built-in type.
func protobufToJSON(b []byte) ([]byte, error) {
	o, gvk, err := protobufDecoder().Decode(b, nil, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest("decoding protobuf body: " + err.Error())
	}
	j, err := json.Marshal(o)
	if err != nil {
		return nil, apierrors.NewBadRequest("re-encoding protobuf body: " + err.Error())
	}
	m, err := decodeObject(j)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return json.Marshal(m)
}

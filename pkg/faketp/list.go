package faketp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tpkit-dev/tpkit/pkg/faketp/store"
)

// selector is a parsed label and field selector for one resource.
type selector struct {
	res    *resource
	labels labels.Selector
	fields fields.Selector
	// name, tenant and namespace further restrict the match (object watches).
	name string
}

func parseSelector(q map[string][]string, res *resource) (*selector, error) {
	s := &selector{res: res, labels: labels.Everything(), fields: fields.Everything()}
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if ls := get("labelSelector"); ls != "" {
		sel, err := labels.Parse(ls)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
		s.labels = sel
	}
	if fs := get("fieldSelector"); fs != "" {
		sel, err := fields.ParseSelector(fs)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
		for _, req := range sel.Requirements() {
			if !res.selectable(req.Field) {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", truncate(req.Field)))
			}
		}
		s.fields = sel
	}
	return s, nil
}

func (r *resource) selectable(f string) bool {
	switch f {
	case "metadata.name":
		return true
	case "metadata.namespace":
		return r.scope == scopeNamespace
	case "metadata.tenant":
		return r.scope != scopeCluster
	}
	_, ok := r.fields[f]
	return ok
}

func (s *selector) match(o *store.Object) bool {
	if s.name != "" && o.Name != s.name {
		return false
	}
	if !s.labels.Empty() && !s.labels.Matches(labels.Set(o.Labels)) {
		return false
	}
	return s.fields.Empty() || s.fields.Matches(objFields{o})
}

// objFields presents an object's selectable fields to fields.Selector.
type objFields struct{ o *store.Object }

func (f objFields) Has(k string) bool { return f.Get(k) != "" }

func (f objFields) Get(k string) string {
	switch k {
	case "metadata.name":
		return f.o.Name
	case "metadata.namespace":
		return f.o.Namespace
	case "metadata.tenant":
		return f.o.Tenant
	}
	return f.o.Fields[k]
}

// continueToken is the opaque continue value of a paged list: the version of
// the first page and the last key served.
type continueToken struct {
	RV        uint64 `json:"rv"`
	Tenant    string `json:"t"`
	Namespace string `json:"ns"`
	Name      string `json:"n"`
}

func encodeContinue(c continueToken) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var c continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		return c, apierrors.NewBadRequest("continue key is not valid: " + err.Error())
	}
	return c, nil
}

func (tp *TP) serveList(w http.ResponseWriter, r *http.Request, t target) {
	q := r.URL.Query()
	sel, err := parseSelector(q, t.res)
	if err != nil {
		writeError(w, err)
		return
	}
	lo := t.listOptions()
	lo.Match = sel.match
	if l := q.Get("limit"); l != "" {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil || n < 0 {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid limit %q", truncate(l))))
			return
		}
		if n > 0 && n < 1<<31 {
			lo.Limit = int(n)
		}
	}
	var cont *continueToken
	if c := q.Get("continue"); c != "" {
		tok, err := decodeContinue(c)
		if err != nil {
			writeError(w, err)
			return
		}
		cont = &tok
		lo.After = &store.Key{Tenant: tok.Tenant, Namespace: tok.Namespace, Name: tok.Name}
	}
	objs, rv, more := tp.st().List(t.res.storeName(), lo)
	if cont != nil {
		// A continued list reads the current state but reports the first
		// page's version; the watch that follows from there replays every
		// change since, so the client converges. Versions lost to
		// compaction cannot be replayed: 410, as kube-apiserver answers.
		if cont.RV < tp.st().Oldest() {
			writeError(w, errGone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."))
			return
		}
		rv = cont.RV
	}
	if tf := tableRequest(r); tf.on {
		lm := metav1.ListMeta{ResourceVersion: strconv.FormatUint(rv, 10)}
		if more && len(objs) > 0 {
			last := objs[len(objs)-1]
			lm.Continue = encodeContinue(continueToken{RV: rv, Tenant: last.Tenant, Namespace: last.Namespace, Name: last.Name})
		}
		b, err := tf.render(t.res, objs, lm, true)
		if err != nil {
			writeError(w, err)
			return
		}
		writeRaw(w, http.StatusOK, b)
		return
	}
	var b bytes.Buffer
	size := 128
	for _, o := range objs {
		size += len(o.Data) + 1
	}
	b.Grow(size)
	b.WriteString(`{"kind":"`)
	b.WriteString(t.res.kind)
	b.WriteString(`List","apiVersion":"`)
	b.WriteString(t.res.apiVersion())
	b.WriteString(`","metadata":{"resourceVersion":"`)
	b.WriteString(strconv.FormatUint(rv, 10))
	b.WriteByte('"')
	if more && len(objs) > 0 {
		last := objs[len(objs)-1]
		b.WriteString(`,"continue":"`)
		b.WriteString(encodeContinue(continueToken{RV: rv, Tenant: last.Tenant, Namespace: last.Namespace, Name: last.Name}))
		b.WriteByte('"')
	}
	b.WriteString(`},"items":[`)
	for i, o := range objs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(o.Data)
	}
	b.WriteString("]}")
	writeRaw(w, http.StatusOK, b.Bytes())
}

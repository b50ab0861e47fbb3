package faketp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
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
	return f.o.Fields.Get(k)
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

// parseLimit reads a list's limit; 0 is none.
func parseLimit(q url.Values) (int, error) {
	l := q.Get("limit")
	if l == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(l, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid limit %q", truncate(l)))
	}
	if n > 0 && n < 1<<31 {
		return int(n), nil
	}
	return 0, nil
}

// readList reads a list's objects as the API server would: a continued
// list at its first page's version (etcd's consistent snapshot until
// compaction), an exact version from etcd, else the current state. It sets
// rv to the version read and reports whether more objects follow.
func (tp *TP) readList(cont string, t target, lo store.ListOptions, rv *listRV) ([]*store.Object, bool, error) {
	switch {
	case cont != "":
		tok, err := decodeContinue(cont)
		if err != nil {
			return nil, false, err
		}
		if rv.exact || rv.atLeast > 0 {
			return nil, false, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		lo.After = &store.Key{Tenant: tok.Tenant, Namespace: tok.Namespace, Name: tok.Name}
		rv.exact, rv.atLeast = true, tok.RV
		objs, more, err := tp.st().ListAt(t.res.storeName(), tok.RV, lo)
		if err != nil {
			return nil, false, errGone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
		}
		return objs, more, nil
	case rv.exact:
		// kube-apiserver reads exactly this version from etcd.
		objs, more, err := tp.st().ListAt(t.res.storeName(), rv.atLeast, lo)
		switch {
		case errors.Is(err, store.ErrGone):
			return nil, false, errGone("The resourceVersion for the provided list is too old.")
		case err != nil:
			return nil, false, errTooNewRV(rv.atLeast, tp.st().RV())
		}
		return objs, more, nil
	}
	objs, cur, more := tp.st().List(t.res.storeName(), lo)
	if rv.atLeast > cur {
		return nil, false, errTooNewRV(rv.atLeast, cur)
	}
	rv.atLeast = cur
	return objs, more, nil
}

// serveList answers a list: selectors, limit and continue, the
// resourceVersion semantics of readList, as JSON or a Table.
func (tp *TP) serveList(w http.ResponseWriter, r *http.Request, t target) {
	q := r.URL.Query()
	sel, err := parseSelector(q, t.res)
	if err != nil {
		writeError(w, err)
		return
	}
	lo := t.listOptions()
	lo.Match = sel.match
	if lo.Limit, err = parseLimit(q); err != nil {
		writeError(w, err)
		return
	}
	rv, err := listVersion(q, lo.Limit > 0)
	if err != nil {
		writeError(w, err)
		return
	}
	if q.Get("resourceVersion") == "0" && q.Get("continue") == "" {
		// Served from the watch cache, which ignores the limit: one page.
		lo.Limit = 0
	}
	objs, more, err := tp.readList(q.Get("continue"), t, lo, &rv)
	if err != nil {
		writeError(w, err)
		return
	}
	lm := metav1.ListMeta{SelfLink: r.URL.Path, ResourceVersion: strconv.FormatUint(rv.atLeast, 10)}
	if more && len(objs) > 0 {
		last := objs[len(objs)-1]
		lm.Continue = encodeContinue(continueToken{RV: rv.atLeast, Tenant: last.Tenant, Namespace: last.Namespace, Name: last.Name})
	}
	if tf := tableRequest(r); tf.on {
		b, err := tf.render(t.res, objs, lm, true)
		if err != nil {
			writeError(w, err)
			return
		}
		writeRaw(w, http.StatusOK, b)
		return
	}
	writeRaw(w, http.StatusOK, listJSON(t.res, lm, objs))
}

// listJSON writes a list as kube-apiserver does: items without kind and
// apiVersion (the stored JSON, as it is).
func listJSON(res *resource, lm metav1.ListMeta, objs []*store.Object) []byte {
	var b bytes.Buffer
	size := 192 + len(lm.SelfLink) + len(lm.Continue)
	for _, o := range objs {
		size += len(o.Data) + 1
	}
	b.Grow(size)
	b.WriteString(`{"kind":"`)
	b.WriteString(res.kind)
	b.WriteString(`List","apiVersion":"`)
	b.WriteString(res.apiVersion())
	b.WriteString(`","metadata":`)
	md, _ := json.Marshal(lm)
	b.Write(md)
	b.WriteString(`,"items":[`)
	for i, o := range objs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(o.Data)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// listRV is what a list's resourceVersion and resourceVersionMatch ask for.
type listRV struct {
	// exact: the state at atLeast exactly; else at least as new as it.
	exact   bool
	atLeast uint64
}

// listVersion reads resourceVersion and resourceVersionMatch as
// kube-apiserver 1.18 does: "" is the latest state, "0" any state (fake-tp's
// is always the latest, in one page: the watch cache ignores limit), N with a
// limit or resourceVersionMatch=Exact exactly N, N otherwise (or
// NotOlderThan) at least N.
func listVersion(q map[string][]string, paged bool) (listRV, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	s, match := get("resourceVersion"), get("resourceVersionMatch")
	invalid := func(detail string) error {
		return apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("ListOptions").GroupKind(), "", field.ErrorList{
			field.Forbidden(field.NewPath("resourceVersionMatch"), detail),
		})
	}
	switch match {
	case "", string(metav1.ResourceVersionMatchNotOlderThan), string(metav1.ResourceVersionMatchExact):
	default:
		return listRV{}, invalid(fmt.Sprintf("unsupported resourceVersionMatch %q", truncate(match)))
	}
	if match != "" && s == "" {
		return listRV{}, invalid("resourceVersionMatch is forbidden unless resourceVersion is provided")
	}
	if s == "" || s == "0" {
		if match == string(metav1.ResourceVersionMatchExact) {
			return listRV{}, invalid(`resourceVersionMatch "Exact" is forbidden for resourceVersion "0"`)
		}
		return listRV{}, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return listRV{}, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", truncate(s)))
	}
	exact := match == string(metav1.ResourceVersionMatchExact) || (match == "" && paged)
	return listRV{exact: exact, atLeast: n}, nil
}

// errTooNewRV answers a version newer than the store has issued.
func errTooNewRV(asked, current uint64) error {
	return errGone(fmt.Sprintf("Too large resource version: %d, current: %d", asked, current))
}

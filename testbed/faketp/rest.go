package faketp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// serveAPI dispatches one request under /api or /apis. It returns the verb
// and resource for metrics.
func (tp *TP) serveAPI(w http.ResponseWriter, r *http.Request) (verb, res string) {
	t, err := parsePath(r.URL.Path)
	if err == nil && !tp.servesGroup(t.group) {
		err = notFoundPath(r.URL.Path)
	}
	if err == nil {
		t, err = t.forCaller(userFrom(r.Context()))
	}
	if err != nil {
		writeError(w, err)
		return "other", ""
	}
	if t.kind == targetRoot || t.kind == targetGroup || t.kind == targetGroupVersion {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, errMethodNotAllowed(r.Method, "discovery"))
			return "other", ""
		}
		tp.serveDiscovery(w, r, t)
		return "get", "discovery"
	}
	res = t.res.gvr.Resource
	if t.sub != "" {
		res += "/" + t.sub
	}
	verb = verbOf(r, t)
	if verb == "" {
		writeError(w, errMethodNotAllowed(r.Method, res))
		return "other", res
	}
	if !t.res.hasVerb(verb) || (t.sub == "binding") != (verb == "create" && t.kind == targetObject) {
		writeError(w, errMethodNotAllowed(r.Method, res))
		return "other", res
	}
	// Counted when the request starts, so a test can see a watch open.
	tp.metrics.started(verb, res)
	if t.tenant == tenantAll && verb != "get" && verb != "list" && verb != "watch" {
		// "all" reads every tenant; no tenant of that name exists to write in.
		writeError(w, apierrors.NewNotFound(schema.GroupResource{Resource: "tenants"}, tenantAll))
		return verb, res
	}
	tp.serveVerb(w, r, t, verb)
	return verb, res
}

// verbOf is the Kubernetes verb of a request for a resource, "" when its
// method does not apply to the target.
func verbOf(r *http.Request, t target) string {
	q := r.URL.Query()
	watch := t.watch || q.Get("watch") == "true" || q.Get("watch") == "1"
	switch {
	case r.Method == http.MethodGet && watch:
		return "watch"
	case r.Method == http.MethodGet && t.kind == targetCollection:
		return "list"
	case r.Method == http.MethodGet:
		return "get"
	case r.Method == http.MethodPost && (t.kind == targetCollection || t.sub == "binding"):
		return "create"
	case r.Method == http.MethodPut && t.kind == targetObject:
		return "update"
	case r.Method == http.MethodPatch && t.kind == targetObject:
		return "patch"
	case r.Method == http.MethodDelete && t.kind == targetObject:
		return "delete"
	case r.Method == http.MethodDelete && t.kind == targetCollection:
		return "deletecollection"
	}
	return ""
}

// serveVerb serves an allowed verb on t.
func (tp *TP) serveVerb(w http.ResponseWriter, r *http.Request, t target, verb string) {
	switch verb {
	case "watch":
		tp.serveWatch(w, r, t)
	case "list":
		tp.serveList(w, r, t)
	case "get":
		tp.serveGet(w, r, t)
	case "create":
		if t.sub == "binding" {
			tp.serveBinding(w, r, t)
			return
		}
		tp.serveCreate(w, r, t)
	case "update":
		tp.serveUpdate(w, r, t)
	case "patch":
		tp.servePatch(w, r, t)
	case "delete":
		tp.serveDelete(w, r, t)
	case "deletecollection":
		tp.serveDeleteCollection(w, r, t)
	}
}

// key is the store key of object name under t.
func (t target) key(name string) store.Key {
	k := store.Key{Resource: t.res.storeName(), Name: name}
	switch t.res.scope {
	case scopeTenant:
		k.Tenant = t.tenant
	case scopeNamespace:
		k.Tenant, k.Namespace = t.tenant, t.namespace
	}
	return k
}

// listOptions are the store filters of a collection target.
func (t target) listOptions() store.ListOptions {
	var o store.ListOptions
	if t.res.scope != scopeCluster && !t.allTenants {
		o.Tenant = t.tenant
	}
	if t.res.scope == scopeNamespace {
		o.Namespace = t.namespace
	}
	return o
}

func (tp *TP) serveGet(w http.ResponseWriter, r *http.Request, t target) {
	o, ok := tp.st().Get(t.key(t.name))
	if !ok {
		writeError(w, apierrors.NewNotFound(t.res.gvr.GroupResource(), t.name))
		return
	}
	if tf := tableRequest(r); tf.on {
		b, err := tf.render(t.res, []*store.Object{o}, metav1.ListMeta{ResourceVersion: strconv.FormatUint(o.RV, 10)}, true)
		if err != nil {
			writeError(w, err)
			return
		}
		writeRaw(w, http.StatusOK, b)
		return
	}
	writeObject(w, http.StatusOK, t, o.Data)
}

// writeObject writes a stored object as the answer to a request on t. On a
// subresource, metadata.selfLink names the subresource, as Arktos's does.
func writeObject(w http.ResponseWriter, code int, t target, data []byte) {
	b := t.res.objectJSON(data)
	if t.sub != "" {
		if o, err := decodeObject(b); err == nil {
			if md := child(o, "metadata"); md != nil && str(md, "selfLink") != "" {
				md["selfLink"] = str(md, "selfLink") + "/" + t.sub
				if j, err := json.Marshal(o); err == nil {
					b = j
				}
			}
		}
	}
	writeRaw(w, code, b)
}

// readBody reads a request body of at most maxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge(maxBodyBytes)
		}
		return nil, apierrors.NewBadRequest("reading the request body: " + err.Error())
	}
	return b, nil
}

// readObject reads a JSON (or YAML) object body of a POST or PUT.
func readObject(w http.ResponseWriter, r *http.Request) (obj, error) {
	ct := r.Header.Get("Content-Type")
	mt := "application/json"
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return nil, errUnsupportedMediaType(ct)
		}
	}
	b, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	switch mt {
	case "application/json", "*/*":
	case "application/yaml", "application/x-yaml", "text/yaml":
		if b, err = yaml.YAMLToJSON(b); err != nil {
			return nil, apierrors.NewBadRequest("decoding YAML body: " + err.Error())
		}
	case "application/vnd.kubernetes.protobuf":
		// kubectl's typed clients send protobuf bodies for built-in types.
		// fake-tp stores and answers JSON; the path gives the tenant that
		// protobuf cannot carry.
		if b, err = protobufToJSON(b); err != nil {
			return nil, err
		}
	default:
		return nil, errUnsupportedMediaType(ct)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	o, err := decodeObject(b)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return o, nil
}

// writeOptions say how a write is done.
type writeOptions struct {
	user   admission.UserInfo
	dryRun bool
	// seed: a write from Seed or Generate: no admission, and status is
	// kept on create (a restore, not a client request).
	seed bool
	// grace is a delete's gracePeriodSeconds.
	grace *int64
	// controller: a controller's write, which skips admission (fake-tp's
	// plugins stand for policies on clients, not on Arktos's controllers).
	controller bool
	// trusted: the server made the object (Generate), so its fields have
	// their types and the typed decode that checks them is skipped.
	trusted bool
}

func requestOptions(r *http.Request) writeOptions {
	return writeOptions{user: userFrom(r.Context()), dryRun: len(r.URL.Query()["dryRun"]) > 0}
}

func storeError(err error, r *resource, name string) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apierrors.NewNotFound(r.gvr.GroupResource(), name)
	case errors.Is(err, store.ErrConflict):
		return apierrors.NewConflict(r.gvr.GroupResource(), name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	case errors.Is(err, store.ErrExists):
		return apierrors.NewAlreadyExists(r.gvr.GroupResource(), name)
	case errors.Is(err, store.ErrClosed):
		return errUnavailable("the TP is stopping")
	}
	return err
}

package faketp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	validfield "k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	admissionk8s "github.com/tpkit-dev/tpkit/pkg/admission/k8s"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

func (tp *TP) serveCreate(w http.ResponseWriter, r *http.Request, t target) {
	if t.res.scope == scopeNamespace && t.namespace == "" {
		writeError(w, errMethodNotAllowed(r.Method, t.res.gvr.Resource+" across namespaces"))
		return
	}
	o, err := readObject(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	created, err := tp.create(r.Context(), t, o, requestOptions(r))
	if err != nil {
		writeError(w, err)
		return
	}
	if !requestOptions(r).dryRun {
		tp.changed(created.Key)
	}
	writeObject(w, http.StatusCreated, t, created.Data)
}

// strField reads metadata string field k, failing when it is not a string.
func strField(md obj, k string) (string, error) {
	switch v := md[k].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("metadata.%s must be a string, not %s", k, jsonKind(v)))
	}
}

// normalize checks o against the request target and fills in what the path
// decides: apiVersion, kind, namespace, tenant, and the name for updates.
func normalize(t target, o obj, pathName string) (obj, error) {
	r := t.res
	if av, ok := o["apiVersion"]; ok && av != r.apiVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%v) does not match the expected API version (%s)", av, r.apiVersion()))
	}
	if k, ok := o["kind"]; ok && k != r.kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%v) does not match the expected kind (%s)", k, r.kind))
	}
	o["apiVersion"], o["kind"] = r.apiVersion(), r.kind
	md, err := metadata(o)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	for _, k := range []string{"name", "generateName", "namespace", "tenant", "resourceVersion", "uid"} {
		if _, err := strField(md, k); err != nil {
			return nil, err
		}
	}
	if r.scope == scopeNamespace {
		if ns, _ := strField(md, "namespace"); ns != "" && ns != t.namespace {
			return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
		md["namespace"] = t.namespace
	} else {
		delete(md, "namespace")
	}
	if r.scope == scopeCluster {
		delete(md, "tenant")
	} else {
		if tn, _ := strField(md, "tenant"); tn != "" && tn != t.tenant {
			// Arktos's words (sample 42).
			return nil, apierrors.NewBadRequest("the tenant of the provided object does not match the tenant sent on the request")
		}
		md["tenant"] = t.tenant
	}
	if pathName != "" {
		if n, _ := strField(md, "name"); n != "" && n != pathName {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", truncate(n), pathName))
		}
		md["name"] = pathName
	}
	return md, nil
}

// validateName checks an object name as kube-apiserver (and Arktos for
// tenants) would.
func (r *resource) validateName(name string) error {
	var msgs []string
	switch r.gvr.Resource {
	case "tenants":
		if err := tenancy.ValidateTenantName(name); err != nil {
			msgs = []string{err.Error()}
		}
	case "namespaces":
		if err := tenancy.ValidateLabel("namespace", name); err != nil {
			msgs = []string{err.Error()}
		}
	case "services":
		msgs = validation.IsDNS1035Label(name)
	default:
		msgs = validation.IsDNS1123Subdomain(name)
	}
	if len(msgs) > 0 {
		return errInvalid(r, name, "metadata.name", name, msgs[0])
	}
	return nil
}

// create stores a new object from o under t.
func (tp *TP) create(ctx context.Context, t target, o obj, wo writeOptions) (*store.Object, error) {
	r := t.res
	k, typed, err := tp.prepareCreate(t, o, wo)
	if err != nil {
		return nil, err
	}
	if !wo.seed {
		if err := tp.lifecycle(t); err != nil {
			return nil, err
		}
		if err := tp.admitWrite(ctx, admission.Create, t, k.Name, typed, o, nil, wo); err != nil {
			return nil, err
		}
	}
	if wo.dryRun {
		data, err := encoder(o)(tp.st().RV())
		return &store.Object{Key: k, Data: data}, err
	}
	created, err := tp.st().Create(k, r.index(o), encoder(o))
	if err != nil {
		return nil, storeError(err, r, k.Name)
	}
	return created, nil
}

// prepareCreate checks and completes o for creation under t: path fields,
// name (from generateName), server-set metadata and defaults. It returns
// the store key and the typed object.
func (tp *TP) prepareCreate(t target, o obj, wo writeOptions) (store.Key, runtime.Object, error) {
	r, seed := t.res, wo.seed
	md, err := normalize(t, o, "")
	if err != nil {
		return store.Key{}, nil, err
	}
	name, _ := strField(md, "name")
	if name == "" {
		gn, _ := strField(md, "generateName")
		if gn == "" {
			return store.Key{}, nil, errInvalid(r, "", "metadata.name", "", "name or generateName is required")
		}
		name = gn + rand.String(5)
		md["name"] = name
	}
	if err := r.validateName(name); err != nil {
		return store.Key{}, nil, err
	}
	uid, _ := strField(md, "uid")
	if uid == "" || !seed {
		uid = string(uuid.NewUUID())
		md["uid"] = uid
	}
	md["hashKey"] = hashKey(uid)
	md["selfLink"] = r.selfLink(t.tenant, t.namespace, name)
	if ts, _ := md["creationTimestamp"].(string); ts == "" || !seed {
		md["creationTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	}
	if r.generation {
		md["generation"] = json.Number("1")
	} else {
		delete(md, "generation")
	}
	delete(md, "resourceVersion")
	delete(md, "deletionTimestamp")
	delete(md, "deletionGracePeriodSeconds")
	applyDefaults(r, o)
	if !seed {
		dropNewerFields(r, o)
		tp.defaultOnCreate(r, o)
	}
	if r.gvr.Resource == "services" {
		if err := tp.clusterIPOnCreate(ensureChild(o, "spec"), wo.dryRun); err != nil {
			return store.Key{}, nil, err
		}
	}
	if err := tp.lifecycleDefaults(r, name, o, seed); err != nil {
		return store.Key{}, nil, err
	}
	if wo.trusted {
		return t.key(name), nil, nil
	}
	typed, err := r.typed(o, t.tenant)
	if err != nil {
		return store.Key{}, nil, apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", r.kind, err))
	}
	return t.key(name), typed, nil
}

// lifecycleDefaults completes and checks what Arktos's lifecycle adds to
// tenants and namespaces: a tenant needs spec.storageClusterId "0".."63"
// (Seed and Generate default it to "0") and gets the finalizer "arktos", a
// namespace the finalizer "kubernetes"; both start Active.
func (tp *TP) lifecycleDefaults(r *resource, name string, o obj, seed bool) error {
	var finalizer string
	switch r.gvr.Resource {
	case "tenants":
		finalizer = "arktos"
		spec := ensureChild(o, "spec")
		id, present := spec["storageClusterId"]
		if !present && seed {
			id, present = "0", true
			spec["storageClusterId"] = id
		}
		path := validfield.NewPath("spec", "storageClusterId")
		if !present || id == "" {
			return apierrors.NewInvalid(r.gvk().GroupKind(), name, validfield.ErrorList{validfield.Required(path, "must specify storage cluster id")})
		}
		s, _ := id.(string)
		if n, err := strconv.Atoi(s); err != nil || n < 0 || n > 63 || strconv.Itoa(n) != s {
			return apierrors.NewInvalid(r.gvk().GroupKind(), name, validfield.ErrorList{validfield.Invalid(path, id, "must be a storage cluster id from \"0\" to \"63\"")})
		}
	case "namespaces":
		finalizer = "kubernetes"
	default:
		return nil
	}
	spec := ensureChild(o, "spec")
	if _, ok := spec["finalizers"]; !ok || !seed {
		spec["finalizers"] = []any{finalizer}
	}
	if str(o, "status", "phase") == "" || !seed {
		o["status"] = obj{"phase": "Active"}
	}
	return nil
}

// ensureChild returns the map at o[k], creating it when absent.
func ensureChild(o obj, k string) obj {
	m := child(o, k)
	if m == nil {
		m = obj{}
		o[k] = m
	}
	return m
}

// lifecycle refuses creation in a missing tenant or namespace, as Arktos's
// tenant and namespace lifecycle admission does (samples 25, 32). The
// system tenant needs no Tenant object.
func (tp *TP) lifecycle(t target) error {
	if t.res.scope == scopeCluster {
		return nil
	}
	st := tp.st()
	if !tenancy.IsSystem(t.tenant) {
		if _, ok := st.Get(store.Key{Resource: "tenants", Name: t.tenant}); !ok {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "tenants"}, t.tenant)
		}
	}
	if t.res.scope == scopeNamespace {
		if _, ok := st.Get(store.Key{Resource: "namespaces", Tenant: t.tenant, Name: t.namespace}); !ok {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, t.namespace)
		}
	}
	return nil
}

// admitWrite admits a write unless a controller makes it.
func (tp *TP) admitWrite(ctx context.Context, op admission.Operation, t target, name string, typed runtime.Object, o obj, old runtime.Object, wo writeOptions) error {
	if wo.controller {
		return nil
	}
	return tp.admit(ctx, op, t, name, typed, o, old, wo.user)
}

// admit runs the admission chain on the plain request the adapter makes of
// the objects. A plugin's refusal becomes its API status (the same code and
// message as Arktos's); other errors become Forbidden, so that a plugin bug
// is never a 500.
func (tp *TP) admit(ctx context.Context, op admission.Operation, t target, name string, typed runtime.Object, o obj, old runtime.Object, u admission.UserInfo) error {
	if len(tp.chain) == 0 {
		return nil
	}
	var object runtime.Object = typed
	if object == nil && o != nil {
		object = toUnstructured(o)
	}
	tenant := t.tenant
	if t.res.scope == scopeCluster {
		tenant = ""
	}
	rec := &admissionk8s.Record{
		Operation: op, Kind: t.res.gvk(), Resource: t.res.gvr, Subresource: t.sub,
		Tenant: tenant, Namespace: t.namespace, Name: name, Object: object, OldObject: old, User: u,
	}
	err := admissionk8s.Validate(ctx, tp.chain, rec)
	if err == nil {
		return nil
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	return apierrors.NewForbidden(t.res.gvr.GroupResource(), name, fmt.Errorf("admission denied the request: %w", err))
}

func toUnstructured(o obj) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if b, err := json.Marshal(o); err == nil {
		_ = u.UnmarshalJSON(b)
	}
	return u
}

// oldObject decodes a stored object for admission's OldObject.
func (tp *TP) oldObject(t target, stored *store.Object) (runtime.Object, obj, error) {
	o, err := decodeObject(stored.Data)
	if err != nil {
		return nil, nil, err
	}
	typed, err := t.res.typed(o, stored.Tenant)
	if err != nil {
		return nil, nil, err
	}
	if typed == nil {
		return toUnstructured(o), o, nil
	}
	return typed, o, nil
}

func (tp *TP) serveUpdate(w http.ResponseWriter, r *http.Request, t target) {
	o, err := readObject(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	updated, err := tp.update(r.Context(), t, func(old obj) (obj, bool, error) { return o, true, nil }, requestOptions(r))
	if err != nil {
		writeError(w, err)
		return
	}
	if !requestOptions(r).dryRun {
		tp.changed(updated.Key)
	}
	writeObject(w, http.StatusOK, t, updated.Data)
}

// update replaces the object at t with what mutate makes of the stored one.
// mutate returns the new object and whether its metadata.resourceVersion is
// a precondition (PUT) or not (patches that do not set it). On a conflict
// without a precondition, update retries with the newer object, as
// kube-apiserver's GuaranteedUpdate does.
func (tp *TP) update(ctx context.Context, t target, mutate func(old obj) (obj, bool, error), wo writeOptions) (*store.Object, error) {
	r := t.res
	k := t.key(t.name)
	for attempt := 0; ; attempt++ {
		stored, ok := tp.st().Get(k)
		if !ok {
			return nil, apierrors.NewNotFound(r.gvr.GroupResource(), t.name)
		}
		oldTyped, oldO, err := tp.oldObject(t, stored)
		if err != nil {
			return nil, err
		}
		o, precondition, err := mutate(deepCopy(oldO))
		if err != nil {
			return nil, err
		}
		md, err := normalize(t, o, t.name)
		if err != nil {
			return nil, err
		}
		expect := stored.RV
		if rvs, _ := strField(md, "resourceVersion"); rvs != "" && precondition {
			v, err := strconv.ParseUint(rvs, 10, 64)
			if err != nil {
				return nil, errInvalid(r, t.name, "metadata.resourceVersion", rvs, "must be a resourceVersion this server issued")
			}
			if v != stored.RV {
				return nil, storeError(store.ErrConflict, r, t.name)
			}
		} else {
			precondition = false
		}
		if uid, _ := strField(md, "uid"); uid != "" && uid != str(oldO, "metadata", "uid") {
			return nil, apierrors.NewConflict(r.gvr.GroupResource(), t.name, fmt.Errorf("precondition failed: UID in object meta %s does not match the stored UID", truncate(uid)))
		}
		dropNewerFields(r, o)
		applyDefaults(r, o) // before comparing specs in keepServerFields
		if r.gvr.Resource == "services" && t.sub == "" && !wo.seed {
			if err := tp.clusterIPOnUpdate(r, t.name, ensureChild(o, "spec"), child(oldO, "spec"), wo.dryRun); err != nil {
				return nil, err
			}
		}
		o = keepServerFields(r, t.sub, o, oldO)
		typed, err := r.typed(o, t.tenant)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", r.kind, err))
		}
		if !wo.seed {
			if err := tp.admitWrite(ctx, admission.Update, t, t.name, typed, o, oldTyped, wo); err != nil {
				return nil, err
			}
		}
		if wo.dryRun {
			data, err := encoder(o)(stored.RV)
			return &store.Object{Key: k, Data: data}, err
		}
		updated, err := tp.st().Update(k, expect, r.index(o), encoder(o))
		if errors.Is(err, store.ErrConflict) && !precondition && attempt < 10 {
			continue
		}
		if err != nil {
			return nil, storeError(err, r, t.name)
		}
		return updated, nil
	}
}

// keepServerFields restores what a client cannot change with an update:
// identity and creation metadata, status on the main resource, everything
// but status on /status. It bumps generation (of kinds that have one) when
// spec changes.
func keepServerFields(r *resource, sub string, o, old obj) obj {
	md, oldMD := child(o, "metadata"), child(old, "metadata")
	if sub == "status" {
		n := deepCopy(old)
		if s, ok := o["status"]; ok {
			n["status"] = s
		} else {
			delete(n, "status")
		}
		return n
	}
	for _, f := range []string{"uid", "hashKey", "selfLink", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		if v, ok := oldMD[f]; ok {
			md[f] = v
		} else {
			delete(md, f)
		}
	}
	if r.status {
		if s, ok := old["status"]; ok {
			o["status"] = s
		} else {
			delete(o, "status")
		}
	}
	if !r.generation {
		delete(md, "generation")
		return o
	}
	gen, _ := strconv.ParseInt(str(oldMD, "generation"), 10, 64)
	if gen == 0 {
		gen = 1
	}
	a, _ := json.Marshal(old["spec"])
	b, _ := json.Marshal(o["spec"])
	if !bytes.Equal(a, b) {
		gen++
		a, _ = json.Marshal(child(child(old, "spec"), "template"))
		b, _ = json.Marshal(child(child(o, "spec"), "template"))
		if r.gvr.Resource == "daemonsets" && !bytes.Equal(a, b) {
			ensureChild(md, "annotations")["deprecated.daemonset.template.generation"] = strconv.FormatInt(gen, 10)
		}
	}
	md["generation"] = json.Number(strconv.FormatInt(gen, 10))
	return o
}

func (tp *TP) servePatch(w http.ResponseWriter, r *http.Request, t target) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		writeError(w, errPatchType(ct))
		return
	}
	switch mt {
	case "application/json-patch+json", "application/merge-patch+json":
	case "application/strategic-merge-patch+json":
		if t.res.newTyped == nil {
			writeError(w, errPatchType(ct))
			return
		}
	default:
		writeError(w, errPatchType(ct))
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	var jp jsonpatch.Patch
	if mt == "application/json-patch+json" {
		if jp, err = jsonpatch.DecodePatch(body); err != nil {
			writeError(w, apierrors.NewBadRequest("decoding the JSON patch: "+err.Error()))
			return
		}
	} else if _, err := decodeObject(body); err != nil {
		writeError(w, apierrors.NewBadRequest("decoding the patch: "+err.Error()))
		return
	}
	mutate := func(old obj) (obj, bool, error) {
		orig, err := json.Marshal(old)
		if err != nil {
			return nil, false, err
		}
		var patched []byte
		switch mt {
		case "application/json-patch+json":
			patched, err = jp.Apply(orig)
		case "application/merge-patch+json":
			patched, err = jsonpatch.MergePatch(orig, body)
		default:
			patched, err = strategicpatch.StrategicMergePatch(orig, body, t.res.newTyped())
		}
		if err != nil {
			return nil, false, errPatchFailed(err)
		}
		o, err := decodeObject(patched)
		if err != nil {
			return nil, false, errPatchFailed(err)
		}
		// The patch sets a precondition only if it changed the version.
		return o, str(o, "metadata", "resourceVersion") != str(old, "metadata", "resourceVersion"), nil
	}
	updated, err := tp.update(r.Context(), t, mutate, requestOptions(r))
	if err != nil {
		writeError(w, err)
		return
	}
	if !requestOptions(r).dryRun {
		tp.changed(updated.Key)
	}
	writeObject(w, http.StatusOK, t, updated.Data)
}

func errPatchFailed(err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: "the patch could not be applied: " + truncate(err.Error()),
	}}
}

// protected objects cannot be deleted, as in Arktos and kube-apiserver.
func protected(k store.Key) bool {
	switch k.Resource {
	case "tenants":
		return k.Name == tenancy.SystemTenant
	case "namespaces":
		return k.Tenant == tenancy.SystemTenant && (k.Name == "default" || k.Name == "kube-system" || k.Name == "kube-public")
	}
	return false
}

func (tp *TP) serveDelete(w http.ResponseWriter, r *http.Request, t target) {
	body, err := readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	var opts metav1.DeleteOptions
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			writeError(w, apierrors.NewBadRequest("decoding DeleteOptions: "+err.Error()))
			return
		}
	}
	if g := r.URL.Query().Get("gracePeriodSeconds"); g != "" {
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", truncate(g))))
			return
		}
		opts.GracePeriodSeconds = &n
	}
	wo := requestOptions(r)
	wo.dryRun = wo.dryRun || len(opts.DryRun) > 0
	wo.grace = opts.GracePeriodSeconds
	deleted, err := tp.delete(r.Context(), t, t.key(t.name), opts.Preconditions, wo)
	if err != nil {
		writeError(w, err)
		return
	}
	if !wo.dryRun {
		tp.changed(deleted.Key)
	}
	writeObject(w, http.StatusOK, t, deleted.Data)
}

// delete removes one object, then what lived in it (a namespace's objects,
// a tenant's namespaces and objects), as Arktos's controllers would.
func (tp *TP) delete(ctx context.Context, t target, k store.Key, pre *metav1.Preconditions, wo writeOptions) (*store.Object, error) {
	r := t.res
	stored, ok := tp.st().Get(k)
	if !ok {
		return nil, apierrors.NewNotFound(r.gvr.GroupResource(), k.Name)
	}
	if protected(k) {
		return nil, apierrors.NewForbidden(r.gvr.GroupResource(), k.Name, fmt.Errorf("this %s may not be deleted", r.singular))
	}
	oldTyped, oldO, err := tp.oldObject(t, stored)
	if err != nil {
		return nil, err
	}
	expect := stored.RV
	if pre != nil {
		if pre.UID != nil && string(*pre.UID) != str(oldO, "metadata", "uid") {
			return nil, apierrors.NewConflict(r.gvr.GroupResource(), k.Name, fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", *pre.UID, str(oldO, "metadata", "uid")))
		}
		if pre.ResourceVersion != nil && *pre.ResourceVersion != strconv.FormatUint(stored.RV, 10) {
			return nil, apierrors.NewConflict(r.gvr.GroupResource(), k.Name, fmt.Errorf("precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %d", *pre.ResourceVersion, stored.RV))
		}
	}
	t.name = k.Name
	if !wo.seed {
		if err := tp.admitWrite(ctx, admission.Delete, t, k.Name, nil, nil, oldTyped, wo); err != nil {
			return nil, err
		}
	}
	var marked *store.Object
	if r.gvr.Resource == "pods" && !wo.seed {
		if marked, err = tp.markPodDeleted(k, stored, oldO, wo); err != nil || wo.dryRun {
			return marked, err
		}
		expect = marked.RV
	}
	if wo.dryRun {
		return stored, nil
	}
	deleted, err := tp.st().Delete(k, expect, encoder(oldO))
	if err != nil {
		return nil, storeError(err, r, k.Name)
	}
	tp.cascade(k)
	if marked != nil {
		return marked, nil
	}
	return deleted, nil
}

// markPodDeleted is the first half of a pod's graceful deletion, as Arktos
// does it (samples 60, 65): the pod gets metadata.deletionTimestamp and
// deletionGracePeriodSeconds in a write of its own (a MODIFIED event), and
// that is what DELETE answers. The grace period is the request's, else 0
// for a pod on no node and spec.terminationGracePeriodSeconds for a bound
// one. fake-tp has no kubelet to wait for, so delete completes the
// deletion at once, bound or not. o is the stored pod; it is changed.
func (tp *TP) markPodDeleted(k store.Key, stored *store.Object, o obj, wo writeOptions) (*store.Object, error) {
	md := child(o, "metadata")
	if str(md, "deletionTimestamp") != "" {
		return stored, nil
	}
	var grace int64
	switch {
	case wo.grace != nil:
		grace = max(*wo.grace, 0)
	case str(o, "spec", "nodeName") != "":
		grace = 30
		if g, err := strconv.ParseInt(str(o, "spec", "terminationGracePeriodSeconds"), 10, 64); err == nil {
			grace = g
		}
	}
	md["deletionTimestamp"] = time.Now().Add(time.Duration(grace) * time.Second).UTC().Format(time.RFC3339)
	md["deletionGracePeriodSeconds"] = json.Number(strconv.FormatInt(grace, 10))
	r := lookupStoreName(k.Resource)
	if wo.dryRun {
		data, err := encoder(o)(stored.RV)
		return &store.Object{Key: k, Meta: stored.Meta, RV: stored.RV, Data: data}, err
	}
	marked, err := tp.st().Update(k, stored.RV, r.index(o), encoder(o))
	if err != nil {
		return nil, storeError(err, r, k.Name)
	}
	return marked, nil
}

// cascade deletes the contents of a deleted namespace or tenant.
func (tp *TP) cascade(k store.Key) {
	var lo store.ListOptions
	switch k.Resource {
	case "namespaces":
		lo = store.ListOptions{Tenant: k.Tenant, Namespace: k.Name}
	case "tenants":
		lo = store.ListOptions{Tenant: k.Name}
	default:
		return
	}
	for _, r := range resources {
		if r.scope == scopeCluster || (k.Resource == "namespaces" && r.scope != scopeNamespace) {
			continue
		}
		objs, _, _ := tp.st().List(r.storeName(), lo)
		for _, o := range objs {
			old, err := decodeObject(o.Data)
			if err != nil {
				continue
			}
			if _, err := tp.st().Delete(o.Key, 0, encoder(old)); err == nil {
				tp.cascade(o.Key)
			}
		}
	}
}

func (tp *TP) serveDeleteCollection(w http.ResponseWriter, r *http.Request, t target) {
	sel, err := parseSelector(r.URL.Query(), t.res)
	if err != nil {
		writeError(w, err)
		return
	}
	lo := t.listOptions()
	lo.Match = sel.match
	objs, rv, _ := tp.st().List(t.res.storeName(), lo)
	wo := requestOptions(r)
	var deleted []*store.Object
	for _, o := range objs {
		if protected(o.Key) {
			continue
		}
		tt := t
		tt.tenant, tt.namespace = o.Tenant, o.Namespace
		d, err := tp.delete(r.Context(), tt, o.Key, nil, wo)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			writeError(w, err)
			return
		}
		deleted = append(deleted, d)
	}
	if !wo.dryRun {
		keys := make([]store.Key, len(deleted))
		for i, d := range deleted {
			keys[i] = d.Key
		}
		tp.changed(keys...)
	}
	writeRaw(w, http.StatusOK, listJSON(t.res, metav1.ListMeta{SelfLink: r.URL.Path, ResourceVersion: strconv.FormatUint(rv, 10)}, deleted))
}

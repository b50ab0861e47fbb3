package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/admission/daemonset"
	admissionk8s "github.com/tpkit-dev/tpkit/pkg/admission/k8s"
	"github.com/tpkit-dev/tpkit/pkg/admission/tenantname"
)

var (
	dsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}
	dsGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
	alice = &admission.User{Name: "alice", Extra: map[string][]string{"tenant": {"t1"}}}
)

func ds(name string, deleting bool) *appsv1.DaemonSet {
	d := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}}
	if deleting {
		now := metav1.Now()
		d.DeletionTimestamp = &now
	}
	return d
}

func unstructuredDS(name string, deletionTimestamp any) *unstructured.Unstructured {
	md := map[string]any{"name": name}
	if deletionTimestamp != nil {
		md["deletionTimestamp"] = deletionTimestamp
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": md}}
}

func TestRequest(t *testing.T) {
	cases := []struct {
		name string
		rec  admissionk8s.Record
		want admission.Request
	}{
		{"create from a typed object",
			admissionk8s.Record{Operation: admission.Create, Kind: dsGVK, Resource: dsGVR, Tenant: "t1", Namespace: "kube-system", Object: ds("ds1", false), User: alice},
			admission.Request{Operation: admission.Create, Group: "apps", Resource: "daemonsets", Kind: "DaemonSet", Tenant: "t1", Namespace: "kube-system", ObjectName: "ds1", User: alice}},
		{"update: the name is the new object's, deletion the old one's",
			admissionk8s.Record{Operation: admission.Update, Kind: dsGVK, Resource: dsGVR, Subresource: "status", Name: "ds1", Object: ds("new", false), OldObject: ds("old", true)},
			admission.Request{Operation: admission.Update, Group: "apps", Resource: "daemonsets", Subresource: "status", Kind: "DaemonSet", Name: "ds1", ObjectName: "new", BeingDeleted: true}},
		{"update: a new object being deleted is not a deletion in progress",
			admissionk8s.Record{Operation: admission.Update, Resource: dsGVR, Object: ds("ds1", true), OldObject: ds("ds1", false)},
			admission.Request{Operation: admission.Update, Group: "apps", Resource: "daemonsets", ObjectName: "ds1"}},
		{"update: unstructured old object being deleted",
			admissionk8s.Record{Operation: admission.Update, Resource: dsGVR, Object: unstructuredDS("ds1", nil), OldObject: unstructuredDS("ds1", "2020-01-01T00:00:00Z")},
			admission.Request{Operation: admission.Update, Group: "apps", Resource: "daemonsets", ObjectName: "ds1", BeingDeleted: true}},
		{"update: a malformed deletionTimestamp is not a deletion",
			admissionk8s.Record{Operation: admission.Update, Resource: dsGVR, OldObject: unstructuredDS("ds1", 7)},
			admission.Request{Operation: admission.Update, Group: "apps", Resource: "daemonsets"}},
		{"update: typed nil objects",
			admissionk8s.Record{Operation: admission.Update, Resource: dsGVR, Object: (*appsv1.DaemonSet)(nil), OldObject: (*unstructured.Unstructured)(nil)},
			admission.Request{Operation: admission.Update, Group: "apps", Resource: "daemonsets"}},
		{"delete: the name is the stored object's",
			admissionk8s.Record{Operation: admission.Delete, Resource: dsGVR, Object: ds("ignored", false), OldObject: ds("stored", true)},
			admission.Request{Operation: admission.Delete, Group: "apps", Resource: "daemonsets", ObjectName: "stored", BeingDeleted: true}},
		{"an object without metadata",
			admissionk8s.Record{Operation: admission.Create, Resource: dsGVR, Object: &metav1.Status{}},
			admission.Request{Operation: admission.Create, Group: "apps", Resource: "daemonsets"}},
		{"kind only: the kind's group",
			admissionk8s.Record{Operation: admission.Create, Kind: dsGVK, Object: ds("ds1", false)},
			admission.Request{Operation: admission.Create, Group: "apps", Kind: "DaemonSet", ObjectName: "ds1"}},
		{"the resource's group wins over the kind's",
			admissionk8s.Record{Operation: admission.Create, Kind: schema.GroupVersionKind{Group: "extensions", Kind: "DaemonSet"}, Resource: dsGVR},
			admission.Request{Operation: admission.Create, Group: "apps", Resource: "daemonsets", Kind: "DaemonSet"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rec.Request(); got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestStatusError: the status carries the core error's code, reason,
// details and, to the byte, its text.
func TestStatusError(t *testing.T) {
	cases := []struct {
		core    *admission.Error
		reason  metav1.StatusReason
		details metav1.StatusDetails
	}{
		{admission.NewForbidden("apps", "daemonsets", "ds", daemonset.Message), metav1.StatusReasonForbidden,
			metav1.StatusDetails{Group: "apps", Kind: "daemonsets", Name: "ds"}},
		{admission.NewForbidden("", "tenants", "system", "the system tenant cannot be deleted"), metav1.StatusReasonForbidden,
			metav1.StatusDetails{Kind: "tenants", Name: "system"}},
		{admission.NewForbidden("apps", "daemonsets", "", "no name"), metav1.StatusReasonForbidden,
			metav1.StatusDetails{Group: "apps", Kind: "daemonsets"}},
		{admission.NewForbidden("", "", "", "nothing at all"), metav1.StatusReasonForbidden, metav1.StatusDetails{}},
		{admission.NewInvalid("", "Tenant", "Bad_Name", "metadata.name", "Bad_Name", "not a label"), metav1.StatusReasonInvalid,
			metav1.StatusDetails{Kind: "Tenant", Name: "Bad_Name", Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "Bad_Name": not a label`, Field: "metadata.name"}}}},
		{admission.NewInvalid("example.com", "Widget", "w", "spec.size", "", ""), metav1.StatusReasonInvalid,
			metav1.StatusDetails{Group: "example.com", Kind: "Widget", Name: "w", Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: ""`, Field: "spec.size"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.core.Error(), func(t *testing.T) {
			err := admissionk8s.StatusError(fmt.Errorf("wrapped: %w", tc.core))
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("%T is not a StatusError", err)
			}
			st := se.Status()
			if st.Message != tc.core.Error() || se.Error() != tc.core.Error() {
				t.Errorf("message %q, core says %q", st.Message, tc.core.Error())
			}
			if int(st.Code) != tc.core.Code() || st.Reason != tc.reason || st.Status != metav1.StatusFailure {
				t.Errorf("status %d %s %s, want %d %s", st.Code, st.Reason, st.Status, tc.core.Code(), tc.reason)
			}
			if fmt.Sprint(*st.Details) != fmt.Sprint(tc.details) {
				t.Errorf("details %+v\nwant    %+v", *st.Details, tc.details)
			}
		})
	}
	t.Run("other errors pass", func(t *testing.T) {
		plain := errors.New("plain")
		if got := admissionk8s.StatusError(plain); got != plain {
			t.Errorf("plain error became %v", got)
		}
		nf := apierrors.NewNotFound(schema.GroupResource{Resource: "tenants"}, "t1")
		if got := admissionk8s.StatusError(nf); got != nf {
			t.Errorf("a status became %v", got)
		}
		if admissionk8s.StatusError(nil) != nil {
			t.Error("nil became an error")
		}
	})
	t.Run("an unknown reason is an internal error", func(t *testing.T) {
		err := admissionk8s.StatusError(&admission.Error{Reason: "Teapot", Message: "short"})
		if !apierrors.IsInternalError(err) {
			t.Errorf("got %v", err)
		}
	})
}

// TestValidate runs tpkit's plugins from API objects, as fake-tp and the
// webhook do, and checks the answer a client gets.
func TestValidate(t *testing.T) {
	chain := admission.Chain{daemonset.New(daemonset.Config{}), tenantname.New()}
	ctx := context.Background()

	// Arktos's recorded answer (responses/72-daemonset-create-acme.json).
	err := admissionk8s.Validate(ctx, chain, &admissionk8s.Record{Operation: admission.Create, Kind: dsGVK, Resource: dsGVR,
		Tenant: "acme", Namespace: "default", Object: ds("ds", false)})
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("got %T %v, want a StatusError", err, err)
	}
	st := se.Status()
	if st.Code != 403 || st.Reason != metav1.StatusReasonForbidden || st.Details == nil ||
		st.Details.Name != "ds" || st.Details.Group != "apps" || st.Details.Kind != "daemonsets" ||
		st.Message != `daemonsets.apps "ds" is forbidden: only system tenant is allowed to have DaemonSet` {
		t.Fatalf("status %+v", st)
	}

	for _, tc := range []struct {
		name    string
		rec     *admissionk8s.Record
		allowed bool
	}{
		{"update of a t1 DaemonSet being deleted", &admissionk8s.Record{Operation: admission.Update, Resource: dsGVR, Tenant: "t1", Name: "ds1",
			Object: ds("ds1", false), OldObject: unstructuredDS("ds1", "2020-01-01T00:00:00Z")}, true},
		{"update of a t1 DaemonSet whose new object only is being deleted", &admissionk8s.Record{Operation: admission.Update, Resource: dsGVR, Tenant: "t1", Name: "ds1",
			Object: ds("ds1", true), OldObject: ds("ds1", false)}, false},
		{"update of a t1 DaemonSet with a typed nil old object", &admissionk8s.Record{Operation: admission.Update, Resource: dsGVR, Tenant: "t1", Name: "ds1",
			Object: ds("ds1", false), OldObject: (*appsv1.DaemonSet)(nil)}, false},
		{"tenant named only in the object", &admissionk8s.Record{Operation: admission.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "tenants"},
			Object: &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "Bad_Name"}}}}, false},
		{"CONNECT is handled by none", &admissionk8s.Record{Operation: admission.Connect, Resource: dsGVR, Tenant: "t1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := admissionk8s.Validate(ctx, chain, tc.rec)
			if tc.allowed != (err == nil) {
				t.Fatalf("allowed = %v (%v), want %v", err == nil, err, tc.allowed)
			}
			if err != nil {
				if _, ok := err.(apierrors.APIStatus); !ok {
					t.Fatalf("%T is not an API status", err)
				}
			}
		})
	}
}

// notHandled fails the test if it is ever asked.
type notHandled struct{ t *testing.T }

func (notHandled) Handles(admission.Operation) bool { return false }
func (p notHandled) Validate(context.Context, admission.Request) error {
	p.t.Error("Validate called for an operation the plugin does not handle")
	return nil
}

func TestValidateOnlyWhatIsHandled(t *testing.T) {
	if err := admissionk8s.Validate(context.Background(), notHandled{t}, &admissionk8s.Record{Operation: admission.Create}); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkValidate(b *testing.B) {
	ctx := context.Background()
	// As daemonset's benchmark was before the core split: one plugin, one
	// allowed and one denied decision, from API objects to the status.
	chain := daemonset.New(daemonset.Config{AdminOnly: true})
	allowed := &admissionk8s.Record{Operation: admission.Update, Kind: dsGVK, Resource: dsGVR, Tenant: "system", Name: "ds1",
		Object: ds("ds1", false), OldObject: ds("ds1", false), User: &admission.User{Name: "admin", Groups: []string{"system:masters"}}}
	denied := &admissionk8s.Record{Operation: admission.Create, Kind: dsGVK, Resource: dsGVR, Tenant: "t1", Object: ds("ds1", false), User: alice}
	b.ReportAllocs()
	for b.Loop() {
		if admissionk8s.Validate(ctx, chain, allowed) != nil {
			b.Fatal("denied")
		}
		if admissionk8s.Validate(ctx, chain, denied) == nil {
			b.Fatal("allowed")
		}
	}
}

package k8s

import (
	"context"
	"errors"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tpkit-dev/tpkit/pkg/admission"
)

// Record is one request as an API server holds it: group/version/kind and
// resource, and the objects themselves, typed or *unstructured.Unstructured.
type Record struct {
	Operation   admission.Operation
	Kind        schema.GroupVersionKind
	Resource    schema.GroupVersionResource
	Subresource string
	// Tenant is the Arktos tenant of the request (from the path, or from
	// metadata.tenant); "" is the system tenant.
	Tenant    string
	Namespace string
	Name      string
	// Object is the new object; nil for DELETE.
	Object runtime.Object
	// OldObject is the stored object for UPDATE and DELETE, when known.
	OldObject runtime.Object
	User      admission.UserInfo
}

// Request is r in the core's plain values. The group is the resource's, or
// the kind's when r has no resource; ObjectName comes from OldObject for
// DELETE and from Object otherwise; BeingDeleted says whether OldObject has
// a deletionTimestamp.
func (r *Record) Request() admission.Request {
	group := r.Resource.Group
	if r.Resource.Resource == "" {
		group = r.Kind.Group
	}
	carried := r.Object
	if r.Operation == admission.Delete {
		carried = r.OldObject
	}
	var objectName string
	if m, ok := accessor(carried); ok {
		objectName = m.GetName()
	}
	var deleting bool
	if m, ok := accessor(r.OldObject); ok {
		deleting = m.GetDeletionTimestamp() != nil
	}
	return admission.Request{
		Operation:    r.Operation,
		Group:        group,
		Resource:     r.Resource.Resource,
		Subresource:  r.Subresource,
		Kind:         r.Kind.Kind,
		Tenant:       r.Tenant,
		Namespace:    r.Namespace,
		Name:         r.Name,
		ObjectName:   objectName,
		BeingDeleted: deleting,
		User:         r.User,
	}
}

// Validate runs p on r, when p handles r's operation, and returns its
// answer through StatusError.
func Validate(ctx context.Context, p admission.ValidationInterface, r *Record) error {
	if !p.Handles(r.Operation) {
		return nil
	}
	return StatusError(p.Validate(ctx, r.Request()))
}

// StatusError turns a core *admission.Error (anywhere in err's chain) into
// the apimachinery *StatusError of the same reason: NewForbidden(group,
// resource, name, message) or NewInvalid(kind, name, one field.Invalid).
// Other errors, and nil, are returned as they are.
func StatusError(err error) error {
	e, ok := admission.AsError(err)
	if !ok {
		return err
	}
	switch e.Reason {
	case admission.ReasonForbidden:
		return apierrors.NewForbidden(schema.GroupResource{Group: e.Group, Resource: e.Resource}, e.Name, errors.New(e.Message))
	case admission.ReasonInvalid:
		return apierrors.NewInvalid(schema.GroupKind{Group: e.Group, Kind: e.Kind}, e.Name, field.ErrorList{
			field.Invalid(parsePath(e.Field), e.Value, e.Message),
		})
	}
	return apierrors.NewInternalError(err)
}

// parsePath makes the field.Path that prints as p ("metadata.name").
func parsePath(p string) *field.Path {
	parts := strings.Split(p, ".")
	return field.NewPath(parts[0], parts[1:]...)
}

// accessor is meta.Accessor that also refuses nil and typed nil pointers,
// whose accessors would panic.
func accessor(o runtime.Object) (metav1.Object, bool) {
	if o == nil {
		return nil, false
	}
	if v := reflect.ValueOf(o); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, false
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return nil, false
	}
	return m, true
}

package faketp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	validfield "k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
)

// statusOf turns any error into a metav1.Status. Errors that are not API
// statuses are server faults (500); input problems always come as API
// statuses from the code that found them.
func statusOf(err error) metav1.Status {
	var st apierrors.APIStatus
	var s metav1.Status
	if errors.As(err, &st) {
		s = st.Status()
	} else {
		s = apierrors.NewInternalError(err).ErrStatus
	}
	s.Kind, s.APIVersion = "Status", "v1"
	if s.Status == "" {
		s.Status = metav1.StatusFailure
	}
	if s.Code == 0 {
		s.Code = http.StatusInternalServerError
	}
	return s
}

// writeError writes err as a Status with its code.
func writeError(w http.ResponseWriter, err error) {
	s := statusOf(err)
	if s.Code >= 500 {
		klog.ErrorS(err, "Request failed with a server error")
	}
	writeJSON(w, int(s.Code), s)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"encoding the response failed","reason":"InternalError","code":500}`)
		code = http.StatusInternalServerError
	}
	writeRaw(w, code, b)
}

func writeRaw(w http.ResponseWriter, code int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// Constructors for the statuses that apimachinery has no helper for, or
// whose helper needs a resource we may not have.

func errMethodNotAllowed(method, what string) error {
	return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: what}, method)
}

func errUnsupportedMediaType(ct string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got %q)", truncate(ct)),
	}}
}

func errPatchType(ct string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got %q; fake-tp does not do server-side apply)", truncate(ct)),
	}}
}

func errGone(msg string) error {
	return apierrors.NewResourceExpired(msg)
}

func errUnavailable(msg string) error {
	return apierrors.NewServiceUnavailable(msg)
}

func errUnauthorized() error {
	return apierrors.NewUnauthorized("Unauthorized")
}

func errTooLarge(limit int64) error {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the request body is larger than %d bytes", limit))
}

// errInvalid is a 422 Invalid for one field of an object.
func errInvalid(r *resource, name, field string, value any, detail string) error {
	path := strings.Split(field, ".")
	return apierrors.NewInvalid(r.gvk().GroupKind(), name, validfield.ErrorList{
		validfield.Invalid(validfield.NewPath(path[0], path[1:]...), value, detail),
	})
}

func errForbiddenImpersonation(user, as string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "users"}, as,
		fmt.Errorf("user %q cannot impersonate: only members of system:masters may", user))
}

// notFoundPath is kube-apiserver's answer for a path it does not serve.
func notFoundPath(p string) error {
	e := apierrors.NewNotFound(schema.GroupResource{}, "")
	e.ErrStatus.Message = fmt.Sprintf("the server could not find the requested resource (%s)", truncate(p))
	e.ErrStatus.Details = nil
	return e
}

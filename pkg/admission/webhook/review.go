package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	admissionk8s "github.com/tpkit-dev/tpkit/pkg/admission/k8s"
)

// APIVersion and Kind are the only review type this package speaks.
const (
	APIVersion = "admission.k8s.io/v1"
	Kind       = "AdmissionReview"
)

// DecodeReview parses an AdmissionReview request body. It accepts only
// admission.k8s.io/v1 reviews that carry a request with a uid and a known
// operation; any other input yields an error that says what is wrong.
func DecodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, errors.New("empty body: want an admission.k8s.io/v1 AdmissionReview")
	}
	if body[0] != '{' {
		return nil, errors.New("body is not a JSON object: want an admission.k8s.io/v1 AdmissionReview")
	}
	var r admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("decoding AdmissionReview: %w", err)
	}
	if r.APIVersion != APIVersion || r.Kind != Kind {
		return nil, fmt.Errorf("unsupported review type apiVersion=%q kind=%q: want apiVersion=%q kind=%q (set admissionReviewVersions: [v1])",
			r.APIVersion, r.Kind, APIVersion, Kind)
	}
	if r.Request == nil {
		return nil, errors.New("AdmissionReview has no request")
	}
	if r.Request.UID == "" {
		return nil, errors.New("AdmissionReview request has no uid")
	}
	switch admission.Operation(r.Request.Operation) {
	case admission.Create, admission.Update, admission.Delete, admission.Connect:
	default:
		return nil, fmt.Errorf("AdmissionReview request has unknown operation %q", r.Request.Operation)
	}
	return &r, nil
}

// RecordFromRequest turns a decoded request into the adapter's record, from
// which plugins get their admission.Request. Objects become
// *unstructured.Unstructured. The tenant is the raw object's
// metadata.tenant, for DELETE the old object's, "" (system) when absent.
func RecordFromRequest(req *admissionv1.AdmissionRequest) (*admissionk8s.Record, error) {
	op := admission.Operation(req.Operation)
	obj, err := decodeObject("object", req.Object)
	if err != nil {
		return nil, err
	}
	old, err := decodeObject("oldObject", req.OldObject)
	if err != nil {
		return nil, err
	}
	tenantFrom, field := obj, "object"
	if op == admission.Delete {
		tenantFrom, field = old, "oldObject"
	}
	tenant, err := tenantOf(field, tenantFrom)
	if err != nil {
		return nil, err
	}
	return &admissionk8s.Record{
		Operation:   op,
		Kind:        schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind},
		Resource:    schema.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Resource},
		Subresource: req.SubResource,
		Tenant:      tenant,
		Namespace:   req.Namespace,
		Name:        req.Name,
		Object:      asObject(obj),
		OldObject:   asObject(old),
		User: &admission.User{
			Name:   req.UserInfo.Username,
			UID:    req.UserInfo.UID,
			Groups: req.UserInfo.Groups,
			Extra:  extra(req.UserInfo.Extra),
		},
	}, nil
}

func extra[V ~[]string](in map[string]V) map[string][]string {
	if in == nil {
		return nil
	}
	out := make(map[string][]string, len(in))
	for k, v := range in {
		out[k] = []string(v)
	}
	return out
}

// tenantOf reads Arktos's metadata.tenant, which upstream metav1.ObjectMeta
// does not have; "" when u is nil or has none.
func tenantOf(field string, u *unstructured.Unstructured) (string, error) {
	if u == nil {
		return "", nil
	}
	md, _ := u.Object["metadata"].(map[string]any)
	switch t := md["tenant"].(type) {
	case nil:
		return "", nil
	case string:
		return t, nil
	default:
		return "", fmt.Errorf("request.%s.metadata.tenant is not a string", field)
	}
}

// decodeObject decodes one embedded object; absent or null gives nil.
func decodeObject(field string, raw runtime.RawExtension) (*unstructured.Unstructured, error) {
	b := bytes.TrimSpace(raw.Raw)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return nil, nil
	}
	if b[0] != '{' {
		return nil, fmt.Errorf("request.%s is not a JSON object", field)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decoding request.%s: %w", field, err)
	}
	if md, ok := m["metadata"]; ok && md != nil {
		if _, ok := md.(map[string]any); !ok {
			return nil, fmt.Errorf("request.%s.metadata is not a JSON object", field)
		}
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// Allowed is the response admitting the review's request.
func Allowed(r *admissionv1.AdmissionReview) *admissionv1.AdmissionReview {
	return response(r, &admissionv1.AdmissionResponse{UID: r.Request.UID, Allowed: true})
}

// Denied is the response rejecting the review's request with err. A
// plugin's *admission.Error becomes its API status (admissionk8s.StatusError),
// and an apierrors.APIStatus error (Forbidden, Invalid) is passed on as its
// Status, which the API server returns to the client unchanged; any other
// error becomes a 500 InternalError status.
func Denied(r *admissionv1.AdmissionReview, err error) *admissionv1.AdmissionReview {
	var st apierrors.APIStatus
	var status metav1.Status
	if errors.As(admissionk8s.StatusError(err), &st) {
		status = st.Status()
	} else {
		status = apierrors.NewInternalError(err).Status()
	}
	return response(r, &admissionv1.AdmissionResponse{UID: r.Request.UID, Allowed: false, Result: &status})
}

func response(r *admissionv1.AdmissionReview, resp *admissionv1.AdmissionResponse) *admissionv1.AdmissionReview {
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		Response: resp,
	}
}

// asObject keeps a nil *Unstructured from becoming a non-nil interface.
func asObject(u *unstructured.Unstructured) runtime.Object {
	if u == nil {
		return nil
	}
	return u
}

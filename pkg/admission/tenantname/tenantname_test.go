package tenantname

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tpkit-dev/tpkit/pkg/admission"
)

var (
	tenantsGVR = schema.GroupVersionResource{Version: "v1", Resource: "tenants"}
	tenantGVK  = schema.GroupVersionKind{Version: "v1", Kind: "Tenant"}
)

func tenantObj(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Tenant")
	u.SetName(name)
	return u
}

func rec(op admission.Operation, name string) *admission.Record {
	r := &admission.Record{Operation: op, Kind: tenantGVK, Resource: tenantsGVR, Name: name,
		User: &admission.User{Name: "kubernetes-admin", Groups: []string{"system:masters"}}}
	switch op {
	case admission.Create:
		r.Object = tenantObj(name)
	case admission.Update:
		r.Object, r.OldObject = tenantObj(name), tenantObj(name)
	case admission.Delete:
		r.OldObject = tenantObj(name)
	}
	return r
}

func TestValidate(t *testing.T) {
	type want int
	const (
		allow want = iota
		invalid
		forbidden
	)
	long63 := strings.Repeat("a", 63)
	long64 := strings.Repeat("a", 64)
	cases := []struct {
		name    string
		rec     *admission.Record
		want    want
		message string
	}{
		{"create t1", rec(admission.Create, "t1"), allow, ""},
		{"create with dashes", rec(admission.Create, "team-a-2"), allow, ""},
		{"create 63 chars", rec(admission.Create, long63), allow, ""},
		{"create 64 chars", rec(admission.Create, long64), invalid, "at most 63"},
		{"create all", rec(admission.Create, "all"), invalid, `"all" is reserved`},
		{"create Bad_Name", rec(admission.Create, "Bad_Name"), invalid, "not a DNS-1123 label"},
		{"create upper case", rec(admission.Create, "T1"), invalid, "not a DNS-1123 label"},
		{"create leading dash", rec(admission.Create, "-t1"), invalid, "not a DNS-1123 label"},
		{"create dotted", rec(admission.Create, "a.b"), invalid, "not a DNS-1123 label"},
		{"create empty", func() *admission.Record { r := rec(admission.Create, ""); return r }(), invalid, "must not be empty"},
		{"create system", rec(admission.Create, "system"), forbidden, "cannot be created"},
		{"create name only in object", func() *admission.Record {
			r := rec(admission.Create, "Bad_Name")
			r.Name = ""
			return r
		}(), invalid, "Bad_Name"},
		{"create typed nil object, no name", func() *admission.Record {
			r := rec(admission.Create, "")
			r.Object = (*unstructured.Unstructured)(nil)
			return r
		}(), invalid, "must not be empty"},
		{"delete t1", rec(admission.Delete, "t1"), allow, ""},
		{"delete system", rec(admission.Delete, "system"), forbidden, "cannot be deleted"},
		{"delete system name only in old object", func() *admission.Record {
			r := rec(admission.Delete, "system")
			r.Name = ""
			return r
		}(), forbidden, "cannot be deleted"},
		{"delete invalid name is allowed (cleanup)", rec(admission.Delete, "Bad_Name"), allow, ""},
		{"update system not handled", rec(admission.Update, "system"), allow, ""},
		{"connect not handled", rec(admission.Connect, "system"), allow, ""},
		{"status subresource", func() *admission.Record {
			r := rec(admission.Create, "Bad_Name")
			r.Subresource = "status"
			return r
		}(), allow, ""},
		{"namespaces are not tenants", func() *admission.Record {
			r := rec(admission.Create, "Bad_Name")
			r.Resource, r.Kind = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
			return r
		}(), allow, ""},
		{"tenants in another group", func() *admission.Record {
			r := rec(admission.Create, "Bad_Name")
			r.Resource.Group = "example.com"
			return r
		}(), allow, ""},
		{"kind only", func() *admission.Record {
			r := rec(admission.Create, "all")
			r.Resource = schema.GroupVersionResource{}
			return r
		}(), invalid, "reserved"},
	}
	p := New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := admission.Chain{p}.Validate(context.Background(), tc.rec)
			switch tc.want {
			case allow:
				if err != nil {
					t.Fatalf("want allowed, got %v", err)
				}
				return
			case invalid:
				if !apierrors.IsInvalid(err) {
					t.Fatalf("want Invalid, got %v", err)
				}
			case forbidden:
				if !apierrors.IsForbidden(err) {
					t.Fatalf("want Forbidden, got %v", err)
				}
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("message %q lacks %q", err.Error(), tc.message)
			}
		})
	}
}

package tenantname

import (
	"context"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/admission"
)

func rec(op admission.Operation, name string) admission.Request {
	return admission.Request{Operation: op, Resource: "tenants", Kind: "Tenant", Name: name, ObjectName: name,
		User: &admission.User{Name: "kubernetes-admin", Groups: []string{"system:masters"}}}
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
		rec     admission.Request
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
		{"create empty", func() admission.Request { r := rec(admission.Create, ""); return r }(), invalid, "must not be empty"},
		{"create system", rec(admission.Create, "system"), forbidden, "cannot be created"},
		{"create name only in object", func() admission.Request {
			r := rec(admission.Create, "Bad_Name")
			r.Name = ""
			return r
		}(), invalid, "Bad_Name"},
		{"create name only in request", func() admission.Request {
			r := rec(admission.Create, "all")
			r.ObjectName = ""
			return r
		}(), invalid, `"all" is reserved`},
		{"delete t1", rec(admission.Delete, "t1"), allow, ""},
		{"delete system", rec(admission.Delete, "system"), forbidden, "cannot be deleted"},
		{"delete system name only in old object", func() admission.Request {
			r := rec(admission.Delete, "system")
			r.Name = ""
			return r
		}(), forbidden, "cannot be deleted"},
		{"delete invalid name is allowed (cleanup)", rec(admission.Delete, "Bad_Name"), allow, ""},
		{"update system not handled", rec(admission.Update, "system"), allow, ""},
		{"connect not handled", rec(admission.Connect, "system"), allow, ""},
		{"status subresource", func() admission.Request {
			r := rec(admission.Create, "Bad_Name")
			r.Subresource = "status"
			return r
		}(), allow, ""},
		{"namespaces are not tenants", func() admission.Request {
			r := rec(admission.Create, "Bad_Name")
			r.Resource, r.Kind = "namespaces", "Namespace"
			return r
		}(), allow, ""},
		{"tenants in another group", func() admission.Request {
			r := rec(admission.Create, "Bad_Name")
			r.Group = "example.com"
			return r
		}(), allow, ""},
		{"kind only", func() admission.Request {
			r := rec(admission.Create, "all")
			r.Resource = ""
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
				if e, ok := admission.AsError(err); !ok || e.Reason != admission.ReasonInvalid || e.Code() != 422 ||
					e.Group != "" || e.Kind != "Tenant" || e.Field != "metadata.name" {
					t.Fatalf("want an Invalid *admission.Error for Tenant metadata.name, got %#v", err)
				}
			case forbidden:
				if e, ok := admission.AsError(err); !ok || e.Reason != admission.ReasonForbidden || e.Code() != 403 ||
					e.Group != "" || e.Resource != "tenants" {
					t.Fatalf("want a Forbidden *admission.Error for tenants, got %#v", err)
				}
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("message %q lacks %q", err.Error(), tc.message)
			}
		})
	}
}

// TestMessages: the whole texts, as the Kubernetes statuses print them.
func TestMessages(t *testing.T) {
	for _, tc := range []struct {
		rec  admission.Request
		want string
	}{
		{rec(admission.Create, "Bad_Name"), `Tenant "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": tenant name "Bad_Name" is not a DNS-1123 label: use only lowercase letters, digits and '-', and start and end with a letter or digit`},
		{rec(admission.Create, "all"), `Tenant "all" is invalid: metadata.name: Invalid value: "all": tenant name "all" is reserved and cannot be used`},
		{rec(admission.Create, "system"), `tenants "system" is forbidden: tenant "system" exists in every tenant partition and cannot be created`},
		{rec(admission.Delete, "system"), `tenants "system" is forbidden: the system tenant cannot be deleted`},
	} {
		err := New().Validate(context.Background(), tc.rec)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s %s: got %v\nwant %s", tc.rec.Operation, tc.rec.Name, err, tc.want)
		}
	}
}

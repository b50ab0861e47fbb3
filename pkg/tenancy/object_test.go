package tenancy

import "testing"

// annotated is an upstream-style object: its tenant only in an annotation.
type annotated struct{ ann map[string]string }

func (o *annotated) GetAnnotations() map[string]string  { return o.ann }
func (o *annotated) SetAnnotations(a map[string]string) { o.ann = a }

// arktosMeta stands in for Arktos's ObjectMeta, which has a Tenant field
// with GetTenant and SetTenant (it is not Arktos's code).
type arktosMeta struct {
	annotated
	Tenant string
}

func (o *arktosMeta) GetTenant() string  { return o.Tenant }
func (o *arktosMeta) SetTenant(t string) { o.Tenant = t }

func TestTenantOf(t *testing.T) {
	cases := []struct {
		name string
		obj  Object
		want string
	}{
		{"no tenant", &annotated{}, SystemTenant},
		{"annotation", &annotated{ann: map[string]string{TenantAnnotation: "t1"}}, "t1"},
		{"Arktos object", &arktosMeta{Tenant: "acme"}, "acme"},
		// The Arktos field wins: the annotation is tpkit's, for types
		// without the field.
		{"Arktos object with a stray annotation", &arktosMeta{annotated: annotated{ann: map[string]string{TenantAnnotation: "zeta"}}, Tenant: "acme"}, "acme"},
		{"Arktos object without tenant", &arktosMeta{}, SystemTenant},
	}
	for _, tc := range cases {
		if got := TenantOf(tc.obj); got != tc.want {
			t.Errorf("%s: TenantOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSetTenant(t *testing.T) {
	up := &annotated{}
	SetTenant(up, "t1")
	if TenantOf(up) != "t1" || up.ann[TenantAnnotation] != "t1" {
		t.Fatalf("upstream object after SetTenant(t1): %+v", up)
	}
	ark := &arktosMeta{}
	SetTenant(ark, "acme")
	if ark.Tenant != "acme" || ark.ann != nil {
		t.Fatalf("Arktos object after SetTenant(acme): %+v", ark)
	}
}

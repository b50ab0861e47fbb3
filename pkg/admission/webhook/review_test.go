package webhook

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	admissionk8s "github.com/tpkit-dev/tpkit/pkg/admission/k8s"
)

// review builds an AdmissionReview body; object and oldObject are raw JSON
// ("" leaves them out).
func review(uid, op, group, resource, kind, name, object, oldObject string) string {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"` + uid + `",`)
	b.WriteString(`"kind":{"group":"` + group + `","version":"v1","kind":"` + kind + `"},`)
	b.WriteString(`"resource":{"group":"` + group + `","version":"v1","resource":"` + resource + `"},`)
	b.WriteString(`"namespace":"kube-system","name":"` + name + `","operation":"` + op + `",`)
	b.WriteString(`"userInfo":{"username":"alice","uid":"42","groups":["dev","system:authenticated"],"extra":{"tenant":["t1"]}}`)
	if object != "" {
		b.WriteString(`,"object":` + object)
	}
	if oldObject != "" {
		b.WriteString(`,"oldObject":` + oldObject)
	}
	b.WriteString(`}}`)
	return b.String()
}

func dsJSON(tenant string) string {
	t := ""
	if tenant != "" {
		t = `,"tenant":"` + tenant + `"`
	}
	return `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds1","namespace":"kube-system"` + t + `},"spec":{}}`
}

func TestDecodeReview(t *testing.T) {
	good := review("u1", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("t1"), "")
	cases := []struct {
		name, body, wantErr string
	}{
		{"good", good, ""},
		{"good with whitespace", "\n  " + good + "\n", ""},
		{"empty", "", "empty body"},
		{"spaces", "   ", "empty body"},
		{"array", `[1,2]`, "not a JSON object"},
		{"string", `"x"`, "not a JSON object"},
		{"truncated", good[:len(good)/2], "decoding AdmissionReview"},
		{"trailing garbage", good + "x", "decoding AdmissionReview"},
		{"v1beta1", strings.Replace(good, "admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1), "unsupported review type"},
		{"no apiVersion", `{"kind":"AdmissionReview","request":{"uid":"u"}}`, "unsupported review type"},
		{"wrong kind", strings.Replace(good, `"kind":"AdmissionReview"`, `"kind":"Pod"`, 1), "unsupported review type"},
		{"no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, "no request"},
		{"null request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`, "no request"},
		{"no uid", strings.Replace(good, `"uid":"u1",`, "", 1), "no uid"},
		{"bad operation", strings.Replace(good, `"CREATE"`, `"PATCH"`, 1), `unknown operation "PATCH"`},
		{"missing operation", strings.Replace(good, `"operation":"CREATE",`, "", 1), `unknown operation ""`},
		{"request wrong type", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":7}`, "decoding AdmissionReview"},
		{"uid wrong type", strings.Replace(good, `"uid":"u1"`, `"uid":1`, 1), "decoding AdmissionReview"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeReview([]byte(tc.body))
			if tc.wantErr == "" {
				if err != nil || r.Request == nil || r.Request.UID != "u1" {
					t.Fatalf("DecodeReview = %+v, %v", r, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestRecordFromRequest(t *testing.T) {
	cases := []struct {
		name       string
		body       string
		wantTenant string
		wantErr    string
		check      func(t *testing.T, r *admissionk8s.Record)
	}{
		{name: "create tenant from object", body: review("u", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("t1"), ""), wantTenant: "t1",
			check: func(t *testing.T, r *admissionk8s.Record) {
				want := admissionk8s.Record{Operation: admission.Create, Namespace: "kube-system", Name: "ds1", Tenant: "t1",
					Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"},
					Kind:     schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}}
				if r.Operation != want.Operation || r.Namespace != want.Namespace || r.Name != want.Name || r.Resource != want.Resource || r.Kind != want.Kind {
					t.Errorf("record %+v", r)
				}
				if r.OldObject != nil {
					t.Errorf("old object %v, want nil", r.OldObject)
				}
				u, ok := r.Object.(*unstructured.Unstructured)
				if !ok || u.GetName() != "ds1" || u.GetKind() != "DaemonSet" {
					t.Errorf("object %#v", r.Object)
				}
				if r.User.GetName() != "alice" || r.User.GetUID() != "42" || len(r.User.GetGroups()) != 2 || admission.UserTenant(r.User) != "t1" {
					t.Errorf("user %+v", r.User)
				}
			}},
		{name: "create without tenant is system", body: review("u", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON(""), ""), wantTenant: ""},
		{name: "update tenant from new object", body: review("u", "UPDATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("t1"), dsJSON("system")), wantTenant: "t1"},
		{name: "delete tenant from old object", body: review("u", "DELETE", "apps", "daemonsets", "DaemonSet", "ds1", "", dsJSON("t2")), wantTenant: "t2"},
		{name: "delete ignores object", body: review("u", "DELETE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("t1"), dsJSON("system")), wantTenant: "system"},
		{name: "delete without old object", body: review("u", "DELETE", "apps", "daemonsets", "DaemonSet", "ds1", "", ""), wantTenant: ""},
		{name: "null object", body: review("u", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", "null", ""), wantTenant: "",
			check: func(t *testing.T, r *admissionk8s.Record) {
				if r.Object != nil {
					t.Errorf("object %#v, want nil", r.Object)
				}
			}},
		{name: "object not an object", body: review("u", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", `[1]`, ""), wantErr: "request.object is not a JSON object"},
		{name: "old object not an object", body: review("u", "DELETE", "apps", "daemonsets", "DaemonSet", "ds1", "", `"x"`), wantErr: "request.oldObject is not a JSON object"},
		{name: "metadata not an object", body: review("u", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", `{"metadata":5}`, ""), wantErr: "request.object.metadata is not a JSON object"},
		{name: "tenant not a string", body: review("u", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", `{"metadata":{"tenant":5}}`, ""), wantErr: "metadata.tenant is not a string"},
		{name: "old tenant not a string on delete", body: review("u", "DELETE", "apps", "daemonsets", "DaemonSet", "ds1", "", `{"metadata":{"tenant":{}}}`), wantErr: "request.oldObject.metadata.tenant is not a string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rv, err := DecodeReview([]byte(tc.body))
			if err != nil {
				t.Fatalf("DecodeReview: %v", err)
			}
			r, err := RecordFromRequest(rv.Request)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Tenant != tc.wantTenant {
				t.Errorf("tenant %q, want %q", r.Tenant, tc.wantTenant)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

package faketp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

type resp struct {
	code   int
	body   []byte
	status metav1.Status
}

func do(t *testing.T, tp *faketp.TP, method, path, ct, body string, hdr ...string) resp {
	t.Helper()
	req, err := http.NewRequest(method, tp.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := resp{code: res.StatusCode, body: b}
	if res.StatusCode >= 300 {
		if err := json.Unmarshal(b, &r.status); err != nil || r.status.Kind != "Status" {
			t.Fatalf("%s %s: error %d is not a Status: %s", method, path, res.StatusCode, b)
		}
		if int(r.status.Code) != res.StatusCode {
			t.Fatalf("%s %s: Status code %d, HTTP %d", method, path, r.status.Code, res.StatusCode)
		}
	}
	return r
}

const jsonCT = "application/json"

func TestErrorsAreStatuses(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 1})
	tp := c.TPs()[0]
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}`
	if r := do(t, tp, "POST", "/api/v1/namespaces/default/configmaps", jsonCT, cm); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	cases := []struct {
		name, method, path, ct, body string
		code                         int
		reason                       metav1.StatusReason
	}{
		{"unknown resource", "GET", "/api/v1/foos", "", "", 404, metav1.StatusReasonNotFound},
		{"unknown group", "GET", "/apis/nope/v1/pods", "", "", 404, metav1.StatusReasonNotFound},
		{"unknown version", "GET", "/api/v2/pods", "", "", 404, metav1.StatusReasonNotFound},
		{"unknown subresource", "GET", "/api/v1/namespaces/default/pods/p/log", "", "", 404, metav1.StatusReasonNotFound},
		{"pods need a namespace", "GET", "/api/v1/pods/p", "", "", 404, metav1.StatusReasonNotFound},
		{"not an API path", "GET", "/nope", "", "", 404, metav1.StatusReasonNotFound},
		{"missing object", "GET", "/api/v1/namespaces/default/configmaps/nope", "", "", 404, metav1.StatusReasonNotFound},
		{"invalid tenant in path", "GET", "/api/v1/tenants/Not_A_Label/pods", "", "", 400, metav1.StatusReasonBadRequest},
		{"truncated JSON", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":`, 400, metav1.StatusReasonBadRequest},
		{"JSON array", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `[]`, 400, metav1.StatusReasonBadRequest},
		{"empty body", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, ``, 400, metav1.StatusReasonBadRequest},
		{"metadata not an object", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":"x"}`, 400, metav1.StatusReasonBadRequest},
		{"name not a string", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":{"name":7}}`, 400, metav1.StatusReasonBadRequest},
		{"wrong field type", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":{"name":"x"},"data":{"a":1}}`, 400, metav1.StatusReasonBadRequest},
		{"wrong kind", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"kind":"Pod","metadata":{"name":"x"}}`, 400, metav1.StatusReasonBadRequest},
		{"namespace mismatch", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":{"name":"x","namespace":"other"}}`, 400, metav1.StatusReasonBadRequest},
		{"tenant mismatch on short path", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":{"name":"x","tenant":"acme"}}`, 400, metav1.StatusReasonBadRequest},
		{"tenant mismatch on tenant path", "POST", "/api/v1/tenants/acme/namespaces/default/configmaps", jsonCT, `{"metadata":{"name":"x","tenant":"system"}}`, 400, metav1.StatusReasonBadRequest},
		{"no name", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":{}}`, 422, metav1.StatusReasonInvalid},
		{"bad name", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":{"name":"Bad_Name"}}`, 422, metav1.StatusReasonInvalid},
		{"tenant all", "POST", "/api/v1/tenants", jsonCT, `{"metadata":{"name":"all"},"spec":{"storageClusterId":"0"}}`, 422, metav1.StatusReasonInvalid},
		{"tenant not a label", "POST", "/api/v1/tenants", jsonCT, `{"metadata":{"name":"a.b"},"spec":{"storageClusterId":"0"}}`, 422, metav1.StatusReasonInvalid},
		{"already exists", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, cm, 409, metav1.StatusReasonAlreadyExists},
		{"stale resourceVersion", "PUT", "/api/v1/namespaces/default/configmaps/c1", jsonCT, `{"metadata":{"name":"c1","resourceVersion":"1"}}`, 409, metav1.StatusReasonConflict},
		{"name mismatch on update", "PUT", "/api/v1/namespaces/default/configmaps/c1", jsonCT, `{"metadata":{"name":"c2"}}`, 400, metav1.StatusReasonBadRequest},
		{"update missing", "PUT", "/api/v1/namespaces/default/configmaps/nope", jsonCT, `{"metadata":{"name":"nope"}}`, 404, metav1.StatusReasonNotFound},
		{"protobuf garbage", "POST", "/api/v1/namespaces/default/configmaps", "application/vnd.kubernetes.protobuf", "\x00\x01", 400, metav1.StatusReasonBadRequest},
		{"cbor", "POST", "/api/v1/namespaces/default/configmaps", "application/cbor", "\xa0", 415, metav1.StatusReasonUnsupportedMediaType},
		{"bad content type", "POST", "/api/v1/namespaces/default/configmaps", ";;", "{}", 415, metav1.StatusReasonUnsupportedMediaType},
		{"server-side apply", "PATCH", "/api/v1/namespaces/default/configmaps/c1", "application/apply-patch+yaml", "{}", 415, metav1.StatusReasonUnsupportedMediaType},
		{"strategic patch on tenants", "PATCH", "/api/v1/tenants/system", "application/strategic-merge-patch+json", "{}", 415, metav1.StatusReasonUnsupportedMediaType},
		{"malformed JSON patch", "PATCH", "/api/v1/namespaces/default/configmaps/c1", "application/json-patch+json", `{"op":1}`, 400, metav1.StatusReasonBadRequest},
		{"failing JSON patch", "PATCH", "/api/v1/namespaces/default/configmaps/c1", "application/json-patch+json", `[{"op":"test","path":"/data/x","value":"y"}]`, 422, metav1.StatusReasonInvalid},
		{"malformed merge patch", "PATCH", "/api/v1/namespaces/default/configmaps/c1", "application/merge-patch+json", `{`, 400, metav1.StatusReasonBadRequest},
		{"patch changing the tenant", "PATCH", "/api/v1/namespaces/default/configmaps/c1", "application/merge-patch+json", `{"metadata":{"tenant":"acme"}}`, 400, metav1.StatusReasonBadRequest},
		{"PUT on a collection", "PUT", "/api/v1/namespaces/default/configmaps", jsonCT, cm, 405, metav1.StatusReasonMethodNotAllowed},
		{"POST across namespaces", "POST", "/api/v1/configmaps", jsonCT, cm, 405, metav1.StatusReasonMethodNotAllowed},
		{"POST on discovery", "POST", "/api/v1", jsonCT, "{}", 405, metav1.StatusReasonMethodNotAllowed},
		{"delete system tenant", "DELETE", "/api/v1/tenants/system", "", "", 403, metav1.StatusReasonForbidden},
		{"delete kube-system", "DELETE", "/api/v1/namespaces/kube-system", "", "", 403, metav1.StatusReasonForbidden},
		{"malformed DeleteOptions", "DELETE", "/api/v1/namespaces/default/configmaps/c1", jsonCT, "{", 400, metav1.StatusReasonBadRequest},
		{"bad label selector", "GET", "/api/v1/pods?labelSelector=a%20in%20(", "", "", 400, metav1.StatusReasonBadRequest},
		{"unsupported field selector", "GET", "/api/v1/pods?fieldSelector=spec.foo%3Db", "", "", 400, metav1.StatusReasonBadRequest},
		{"bad continue", "GET", "/api/v1/pods?limit=1&continue=not-base64!", "", "", 400, metav1.StatusReasonBadRequest},
		{"bad limit", "GET", "/api/v1/pods?limit=x", "", "", 400, metav1.StatusReasonBadRequest},
		{"bad watch version", "GET", "/api/v1/pods?watch=1&resourceVersion=abc", "", "", 422, metav1.StatusReasonInvalid},
		{"future watch version", "GET", "/api/v1/pods?watch=1&resourceVersion=99999", "", "", 410, metav1.StatusReasonExpired},
		{"body too large", "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"data":{"a":"` + strings.Repeat("x", 4<<20) + `"}}`, 413, metav1.StatusReasonRequestEntityTooLarge},
		{"unknown token", "GET", "/api/v1/pods", "", "", 401, metav1.StatusReasonUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.code == 401 {
				hdr = []string{"Authorization", "Bearer not-a-token"}
			}
			r := do(t, tp, tc.method, tc.path, tc.ct, tc.body, hdr...)
			if r.code != tc.code || r.status.Reason != tc.reason {
				t.Fatalf("got %d %s, want %d %s: %s", r.code, r.status.Reason, tc.code, tc.reason, r.status.Message)
			}
		})
	}
	// Nothing above changed c1.
	var got corev1.ConfigMap
	r := do(t, tp, "GET", "/api/v1/namespaces/default/configmaps/c1", "", "")
	if err := json.Unmarshal(r.body, &got); err != nil || got.ResourceVersion != "5" && got.Name != "c1" {
		t.Fatalf("c1 after the bad requests: %v %s", err, r.body)
	}
}

func TestListPagingAndSelectors(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 1})
	tp := c.TPs()[0]
	var objs []any
	for i := 0; i < 25; i++ {
		tenant := tenancy.SystemTenant
		if i%5 == 0 {
			tenant = "acme"
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%02d", i), Namespace: fmt.Sprintf("ns%d", i%2),
			Labels: map[string]string{"even": fmt.Sprint(i%2 == 0)}}, Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node%d", i%3)}}
		tenancy.SetTenant(p, tenant)
		objs = append(objs, p)
	}
	if err := tp.Seed(objs...); err != nil {
		t.Fatal(err)
	}
	list := func(q string) (names []string, cont, rv string) {
		t.Helper()
		r := do(t, tp, "GET", "/api/v1/tenants/all/pods?"+q, "", "")
		if r.code != 200 {
			t.Fatalf("list %s: %d %s", q, r.code, r.body)
		}
		var l corev1.PodList
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		return names, l.Continue, l.ResourceVersion
	}
	all, _, rv := list("")
	if len(all) != 25 {
		t.Fatalf("list of every tenant: %d pods", len(all))
	}
	// Paging returns every pod once, in pages of at most 10.
	var paged []string
	cont, pages := "", 0
	for {
		q := "limit=10"
		if cont != "" {
			q += "&continue=" + cont
		}
		names, next, prv := list(q)
		pages++
		if len(names) > 10 || prv != rv {
			t.Fatalf("page %d: %d items, rv %s (first %s)", pages, len(names), prv, rv)
		}
		paged = append(paged, names...)
		if next == "" {
			break
		}
		cont = next
	}
	if pages != 3 || len(paged) != 25 || strings.Join(paged, ",") != strings.Join(all, ",") {
		t.Fatalf("%d pages, %d items: %v", pages, len(paged), paged)
	}
	for _, tc := range []struct {
		q    string
		want int
	}{
		{"labelSelector=even%3Dtrue", 13},
		{"labelSelector=even%21%3Dtrue", 12},
		{"labelSelector=even", 25},
		{"labelSelector=%21even", 0},
		{"fieldSelector=spec.nodeName%3Dnode0", 9},
		{"fieldSelector=spec.nodeName%3Dnode0,metadata.namespace%3Dns1", 4},
		{"fieldSelector=metadata.name%3Dp07", 1},
		{"fieldSelector=metadata.tenant%3Dacme", 5},
		{"fieldSelector=spec.nodeName%3D", 0},
		{"fieldSelector=status.phase%21%3DRunning", 25},
	} {
		if names, _, _ := list(tc.q); len(names) != tc.want {
			t.Errorf("%s: %d pods, want %d", tc.q, len(names), tc.want)
		}
	}
	// Tenant and namespace paths narrow the list.
	for path, want := range map[string]int{
		"/api/v1/pods":                                     20, // the caller's tenant: system
		"/api/v1/tenants/acme/pods":                        5,
		"/api/v1/tenants/acme/namespaces/ns0/pods":         3,
		"/api/v1/namespaces/ns0/pods":                      10,
		"/api/v1/tenants/system/namespaces/ns1/pods":       10,
		"/api/v1/tenants/nobody/pods":                      0,
		"/api/v1/tenants/acme/namespaces/ns0/pods?limit=2": 2,
	} {
		r := do(t, tp, "GET", path, "", "")
		var l corev1.PodList
		if err := json.Unmarshal(r.body, &l); err != nil || len(l.Items) != want {
			t.Errorf("%s: %v, %d pods, want %d", path, err, len(l.Items), want)
		}
		for _, p := range l.Items {
			if tn := tenancy.TenantOf(&p); strings.Contains(path, "/tenants/acme/") && tn != tenancy.SystemTenant {
				t.Errorf("a raw item has annotation tenant %s; the server must send metadata.tenant only", tn)
			}
		}
	}
	// Compaction makes an old continue token expire.
	_, next, _ := list("limit=10")
	tp.Compact()
	if err := tp.Seed(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "ns0"}}); err != nil {
		t.Fatal(err)
	}
	tp.Compact()
	if r := do(t, tp, "GET", "/api/v1/tenants/all/pods?limit=10&continue="+next, "", ""); r.code != 410 || r.status.Reason != metav1.StatusReasonExpired {
		t.Fatalf("continue after compaction: %d %s", r.code, r.status.Reason)
	}
}

func TestWritesKeepServerFields(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 1})
	tp := c.TPs()[0]
	cs := tpClient(t, tp)
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "default"},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "a"}}},
		Status: corev1.PodStatus{PodIP: "1.2.3.4"}}
	got, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Name, "web-") || len(got.Name) != len("web-")+5 || got.UID == "" || got.CreationTimestamp.IsZero() || got.ResourceVersion == "" {
		t.Fatalf("server-set metadata missing: %+v", got.ObjectMeta)
	}
	if got.Status.PodIP != "" || got.Status.Phase != corev1.PodPending {
		t.Fatalf("create kept client status: %+v", got.Status)
	}
	// The main resource ignores status; /status changes only status.
	got.Status.PodIP = "5.6.7.8"
	got.Labels = map[string]string{"a": "b"}
	upd, err := cs.CoreV1().Pods("default").Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Status.PodIP != "" || upd.Labels["a"] != "b" || upd.UID != got.UID {
		t.Fatalf("update: %+v %+v", upd.ObjectMeta, upd.Status)
	}
	upd.Status.PodIP = "5.6.7.8"
	upd.Labels = nil
	st, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.PodIP != "5.6.7.8" || st.Labels["a"] != "b" {
		t.Fatalf("status update: labels %v status %+v", st.Labels, st.Status)
	}
	// A stale update conflicts; patches without a version retry.
	if _, err := cs.CoreV1().Pods("default").Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v", err)
	}
	for typ, patch := range map[types.PatchType]string{
		types.MergePatchType:          `{"metadata":{"labels":{"m":"1"}}}`,
		types.JSONPatchType:           `[{"op":"add","path":"/metadata/labels/j","value":"2"}]`,
		types.StrategicMergePatchType: `{"spec":{"containers":[{"name":"c","image":"b"}]}}`,
	} {
		if _, err := cs.CoreV1().Pods("default").Patch(ctx, got.Name, typ, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
	}
	final, err := cs.CoreV1().Pods("default").Get(ctx, got.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if final.Labels["m"] != "1" || final.Labels["j"] != "2" || final.Labels["a"] != "b" || final.Spec.Containers[0].Image != "b" || len(final.Spec.Containers) != 1 {
		t.Fatalf("after patches: labels %v containers %+v", final.Labels, final.Spec.Containers)
	}
	if final.Generation != 0 {
		t.Fatalf("pod generation %d: pods have none in Arktos (sample 40)", final.Generation)
	}
	// Delete preconditions.
	wrong := types.UID("nope")
	if err := cs.CoreV1().Pods("default").Delete(ctx, got.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}}); !apierrors.IsConflict(err) {
		t.Fatalf("delete with wrong UID: %v", err)
	}
	// Services get a cluster IP.
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 53}}}}, metav1.CreateOptions{})
	if err != nil || svc.Spec.ClusterIP == "" || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Fatalf("service: %v %+v", err, svc.Spec)
	}
}

func TestNamespaceAndTenantDeletionCascade(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 1})
	tp := c.TPs()[0]
	if r := do(t, tp, "POST", "/api/v1/tenants", jsonCT, `{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"acme"},"spec":{"storageClusterId":"0"}}`); r.code != 201 {
		t.Fatalf("create tenant: %d %s", r.code, r.body)
	}
	for _, p := range []string{"/api/v1/tenants/acme/namespaces", "/api/v1/namespaces"} {
		if r := do(t, tp, "POST", p, jsonCT, `{"metadata":{"name":"web"}}`); r.code != 201 {
			t.Fatalf("create namespace: %d %s", r.code, r.body)
		}
	}
	for _, p := range []string{"/api/v1/tenants/acme/namespaces/web/configmaps", "/api/v1/namespaces/web/configmaps"} {
		if r := do(t, tp, "POST", p, jsonCT, `{"metadata":{"name":"c"}}`); r.code != 201 {
			t.Fatalf("create configmap: %d %s", r.code, r.body)
		}
	}
	if r := do(t, tp, "DELETE", "/api/v1/tenants/acme/namespaces/web", "", ""); r.code != 200 {
		t.Fatalf("delete namespace: %d %s", r.code, r.body)
	}
	if r := do(t, tp, "GET", "/api/v1/tenants/acme/namespaces/web/configmaps/c", "", ""); r.code != 404 {
		t.Fatalf("configmap outlived its namespace: %d", r.code)
	}
	if r := do(t, tp, "GET", "/api/v1/namespaces/web/configmaps/c", "", ""); r.code != 200 {
		t.Fatalf("system's web/c went with acme's namespace: %d", r.code)
	}
	if r := do(t, tp, "POST", "/api/v1/tenants/acme/namespaces", jsonCT, `{"metadata":{"name":"x"}}`); r.code != 201 {
		t.Fatal(r.code)
	}
	if r := do(t, tp, "POST", "/api/v1/tenants/acme/namespaces/x/configmaps", jsonCT, `{"metadata":{"name":"c"}}`); r.code != 201 {
		t.Fatal(r.code)
	}
	if r := do(t, tp, "DELETE", "/api/v1/tenants/acme", "", ""); r.code != 200 {
		t.Fatalf("delete tenant: %d %s", r.code, r.body)
	}
	if r := do(t, tp, "GET", "/api/v1/tenants/acme/configmaps", "", ""); !bytes.Contains(r.body, []byte(`"items":[]`)) {
		t.Fatalf("tenant's objects outlived it: %s", r.body)
	}
	// deletecollection with a selector.
	for i := 0; i < 3; i++ {
		do(t, tp, "POST", "/api/v1/namespaces/default/configmaps", jsonCT, fmt.Sprintf(`{"metadata":{"name":"d%d","labels":{"drop":"%v"}}}`, i, i < 2))
	}
	if r := do(t, tp, "DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=drop%3Dtrue", "", ""); r.code != 200 {
		t.Fatalf("deletecollection: %d %s", r.code, r.body)
	}
	r := do(t, tp, "GET", "/api/v1/namespaces/default/configmaps", "", "")
	if bytes.Contains(r.body, []byte(`"d0"`)) || !bytes.Contains(r.body, []byte(`"d2"`)) {
		t.Fatalf("deletecollection removed the wrong objects: %s", r.body)
	}
}

// watchEvents reads a raw watch stream until it ends or n events came.
func watchEvents(t *testing.T, tp *faketp.TP, q string, n int) []map[string]json.RawMessage {
	t.Helper()
	res, err := http.Get(tp.URL() + q)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("watch %s: %d %s", q, res.StatusCode, b)
	}
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for len(out) < n && sc.Scan() {
		var ev map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
		out = append(out, ev)
	}
	return out
}

func evType(ev map[string]json.RawMessage) string {
	var s string
	_ = json.Unmarshal(ev["type"], &s)
	return s
}

func TestWatchSemantics(t *testing.T) {
	// Served watch-list, to check it; Arktos's default ignores it
	// (TestWatchListModes).
	c := faketp.StartT(t, faketp.Options{Partitions: 1, BookmarkInterval: 50 * time.Millisecond, WatchList: faketp.WatchListServed})
	tp := c.TPs()[0]
	mk := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node}}
	}
	if err := tp.Seed(mk("a", "n1"), mk("b", "n2")); err != nil {
		t.Fatal(err)
	}
	rv := tp.Store().RV()

	// resourceVersion "" (and "0"): the current state as ADDED, then changes.
	for _, q := range []string{"", "&resourceVersion=0"} {
		evs := watchEvents(t, tp, "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1"+q, 10)
		if len(evs) != 2 || evType(evs[0]) != "ADDED" || evType(evs[1]) != "ADDED" {
			t.Fatalf("watch%s: %d events", q, len(evs))
		}
	}
	// sendInitialEvents=false at "0": no state, only what happens next.
	tp.Compact()
	if evs := watchEvents(t, tp, "/api/v1/pods?watch=1&resourceVersion=0&sendInitialEvents=false&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=5", 5); len(evs) != 5 {
		t.Fatalf("sendInitialEvents=false: %d events", len(evs))
	} else {
		for _, e := range evs {
			if evType(e) != "BOOKMARK" {
				t.Fatalf("sendInitialEvents=false sent %s", evType(e))
			}
		}
	}
	// Served, sendInitialEvents needs resourceVersionMatch and bookmarks.
	if r := do(t, tp, "GET", "/api/v1/pods?watch=1&sendInitialEvents=true", "", ""); r.code != 422 || r.status.Reason != metav1.StatusReasonInvalid {
		t.Fatalf("sendInitialEvents without bookmarks: %d %s", r.code, r.status.Reason)
	}
	// sendInitialEvents: the state, then the initial-events-end bookmark.
	evs := watchEvents(t, tp, "/api/v1/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1", 3)
	if len(evs) != 3 || evType(evs[2]) != "BOOKMARK" || !bytes.Contains(evs[2]["object"], []byte(metav1.InitialEventsAnnotationKey)) ||
		!bytes.Contains(evs[2]["object"], []byte(fmt.Sprintf(`"resourceVersion":"%d"`, rv))) {
		t.Fatalf("watch-list events: %v", evs)
	}
	// From a version: only later changes, replayed from the history; a pod
	// moving to node n1 enters the node's selector as ADDED and leaves it
	// as DELETED.
	cs := tpClient(t, tp)
	ctx := context.Background()
	for _, node := range []string{"n1", "n3"} {
		b, err := cs.CoreV1().Pods("default").Get(ctx, "b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.Spec.NodeName = node
		if _, err := cs.CoreV1().Pods("default").Update(ctx, b, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	evs = watchEvents(t, tp, fmt.Sprintf("/api/v1/pods?watch=1&resourceVersion=%d&fieldSelector=spec.nodeName%%3Dn1&allowWatchBookmarks=true&timeoutSeconds=1", rv), 1000)
	var types []string
	for _, e := range evs {
		if evType(e) != "BOOKMARK" {
			types = append(types, evType(e))
		}
	}
	if strings.Join(types, ",") != "ADDED,DELETED" {
		t.Fatalf("selector transitions: %v", types)
	}
	sawBookmark := false
	for _, e := range evs {
		sawBookmark = sawBookmark || evType(e) == "BOOKMARK"
	}
	if !sawBookmark {
		t.Fatal("no bookmark on a watch that allowed them")
	}
	// After compaction, an old version is a 200 stream whose only event is
	// an ERROR with 410 Expired, as Arktos's watch cache answers.
	tp.Compact()
	evs = watchEvents(t, tp, fmt.Sprintf("/api/v1/pods?watch=1&resourceVersion=%d", rv), 10)
	var st metav1.Status
	if len(evs) != 1 || evType(evs[0]) != "ERROR" || json.Unmarshal(evs[0]["object"], &st) != nil || !apierrors.IsResourceExpired(apierrors.FromObject(&st)) ||
		st.Message != fmt.Sprintf("too old resource version: %d (%d)", rv, tp.Store().RV()) {
		t.Fatalf("old watch after compaction: %v %+v", evs, st)
	}
	// (A compaction during an open watch is tested in package store.)
}

func TestAdmissionSeesTenantUserAndObject(t *testing.T) {
	rec := &recordingPlugin{}
	c := faketp.StartT(t, faketp.Options{Partitions: 1, Plugins: []faketp.Plugin{{Name: "rec", Plugin: rec}}})
	tp := c.TPs()[0]
	if err := tp.Seed(namespace("acme", "web")); err != nil {
		t.Fatal(err)
	}
	_, cfg, err := tp.KubeconfigFor(faketp.Identity{Name: "alice", Groups: []string{"devs"}, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ContentType = "application/json"
	cs, err := kubernetesFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := tenancyk8s.WithTenant(context.Background(), "acme")
	if _, err := cs.CoreV1().ConfigMaps("web").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "deny-me"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("plugin rejection: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("web").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ok"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps("web").Delete(ctx, "ok", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := rec.records()
	if len(got) != 3 {
		t.Fatalf("%d admission calls, want 3", len(got))
	}
	create, del := got[1], got[2]
	if create.Operation != admission.Create || create.Tenant != "acme" || create.Namespace != "web" || create.Name != "ok" ||
		create.Group != "" || create.Resource != "configmaps" || create.Kind != "ConfigMap" || create.ObjectName != "ok" || create.BeingDeleted {
		t.Fatalf("create record: %+v", create)
	}
	if u := create.User; u.GetName() != "alice" || admission.UserTenant(u) != "acme" || len(u.GetGroups()) != 1 || u.GetGroups()[0] != "devs" {
		t.Fatalf("user: %+v", u)
	}
	if del.Operation != admission.Delete || del.Name != "ok" || del.ObjectName != "ok" || del.BeingDeleted {
		t.Fatalf("delete record: %+v", del)
	}
	// Disabling a plugin by name takes it out of the chain.
	c2 := faketp.StartT(t, faketp.Options{Partitions: 1, Plugins: []faketp.Plugin{{Name: "rec", Plugin: rec}}, DisablePlugins: []string{"rec"}})
	before := len(rec.records())
	if r := do(t, c2.TPs()[0], "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":{"name":"deny-me"}}`); r.code != 201 {
		t.Fatalf("disabled plugin still ran: %d %s", r.code, r.body)
	}
	if len(rec.records()) != before {
		t.Fatal("disabled plugin was called")
	}
	if _, err := faketp.Start(context.Background(), faketp.Options{DisablePlugins: []string{"nope"}}); err == nil {
		t.Fatal("disabling an unknown plugin was accepted")
	}
}

func TestFaultsFromGoAndAdminHTTP(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 2})
	tp1, tp2 := c.TPs()[0], c.TPs()[1]
	admin := httptest.NewServer(faketp.AdminHandler(c))
	defer admin.Close()
	post := func(path string, want int) {
		t.Helper()
		res, err := http.Post(admin.URL+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("POST %s: %d, want %d", path, res.StatusCode, want)
		}
	}
	// Latency: a request takes at least the added delay (a lower bound,
	// which cannot flake), and only on that TP.
	post("/tps/tp1/latency?duration=300ms", 200)
	start := time.Now()
	if r := do(t, tp1, "GET", "/api/v1/namespaces/default", "", ""); r.code != 200 {
		t.Fatal(r.code)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("request with 300ms added latency took %v", d)
	}
	tp1.SetLatency(0)
	// 503 outage on one TP; the other serves.
	post("/tps/tp1/outage?mode=503", 200)
	if r := do(t, tp1, "GET", "/api/v1/namespaces", "", ""); r.code != 503 || r.status.Reason != metav1.StatusReasonServiceUnavailable {
		t.Fatalf("during a 503 outage: %d %s", r.code, r.status.Reason)
	}
	if r := do(t, tp2, "GET", "/api/v1/namespaces", "", ""); r.code != 200 {
		t.Fatalf("the other TP: %d", r.code)
	}
	if tp1.OutageMode() != faketp.OutageUnavailable {
		t.Fatalf("outage mode %v", tp1.OutageMode())
	}
	post("/tps/tp1/outage?mode=none", 200)
	// Refusing connections keeps the port and the data.
	url := tp1.URL()
	if err := tp1.SetOutage(context.Background(), faketp.OutageRefuse); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url + "/api/v1/namespaces"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("during a refuse outage: %v", err)
	}
	if tp1.OutageMode() != faketp.OutageRefuse {
		t.Fatalf("outage mode %v", tp1.OutageMode())
	}
	post("/tps/tp1/outage?mode=none", 200)
	if tp1.URL() != url {
		t.Fatalf("port moved: %s -> %s", url, tp1.URL())
	}
	if r := do(t, tp1, "GET", "/api/v1/namespaces/kube-system", "", ""); r.code != 200 {
		t.Fatalf("after the outage: %d", r.code)
	}
	// Bad admin requests.
	post("/tps/tp9/compact", 404)
	post("/tps/tp1/outage?mode=sideways", 400)
	post("/tps/tp1/latency?duration=-1s", 400)
	post("/tps/tp1/explode", 404)
	post("/tps/tp1/compact", 200)
	post("/tps/tp1/close-watches", 200)
	post("/tps/tp1/restart", 200)
	if r := do(t, tp1, "GET", "/healthz", "", ""); r.code != 200 {
		t.Fatalf("healthz after restart: %d", r.code)
	}
	if r := do(t, tp1, "GET", "/readyz", "", ""); r.code != 200 {
		t.Fatalf("readyz: %d", r.code)
	}
	res, err := http.Get(tp1.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !bytes.Contains(b, []byte(`faketp_requests_total{code="200",resource="namespaces",tp="tp1",verb="get"}`)) {
		t.Fatalf("metrics lack the request counter:\n%s", b)
	}
}

func TestImpersonationAndTokens(t *testing.T) {
	rec := &recordingPlugin{}
	c := faketp.StartT(t, faketp.Options{Plugins: []faketp.Plugin{{Name: "rec", Plugin: rec}}})
	tp := c.TPs()[0]
	if err := tp.Seed(namespace("acme", "default")); err != nil {
		t.Fatal(err)
	}
	body := `{"metadata":{"name":"%s"}}`
	if r := do(t, tp, "POST", "/api/v1/namespaces/default/configmaps", jsonCT, fmt.Sprintf(body, "a"),
		"Impersonate-User", "bob", "Impersonate-Group", "g1", "Impersonate-Group", "g2", "Impersonate-Extra-Tenant", "acme"); r.code != 201 {
		t.Fatalf("impersonated create: %d %s", r.code, r.body)
	}
	u := rec.records()[0].User
	if u.GetName() != "bob" || len(u.GetGroups()) != 2 || admission.UserTenant(u) != "acme" {
		t.Fatalf("impersonated user: %+v", u)
	}
	// A short path is the caller's tenant.
	if tn := rec.records()[0].Tenant; tn != "acme" {
		t.Fatalf("bob's short-path create went to tenant %q", tn)
	}
	// A non-admin may not impersonate.
	path, cfg, err := tp.KubeconfigFor(faketp.Identity{Name: "eve", Tenant: "acme"})
	if err != nil || !strings.HasSuffix(path, ".kubeconfig") {
		t.Fatal(path, err)
	}
	if r := do(t, tp, "POST", "/api/v1/namespaces/default/configmaps", jsonCT, fmt.Sprintf(body, "b"),
		"Authorization", "Bearer "+cfg.BearerToken, "Impersonate-User", "admin"); r.code != 403 {
		t.Fatalf("non-admin impersonation: %d", r.code)
	}
	if r := do(t, tp, "POST", "/api/v1/namespaces/default/configmaps", jsonCT, fmt.Sprintf(body, "c"),
		"Authorization", "Bearer "+cfg.BearerToken); r.code != 201 {
		t.Fatalf("token create: %d", r.code)
	}
	recs := rec.records()
	if u := recs[len(recs)-1].User; u.GetName() != "eve" || admission.UserTenant(u) != "acme" {
		t.Fatalf("token user: %+v", u)
	}
	if r := do(t, tp, "GET", "/api/v1/pods", "", "", "Authorization", "Basic Zm9vOmJhcg=="); r.code != 401 {
		t.Fatalf("basic auth: %d", r.code)
	}
}

func TestTables(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 1})
	tp := c.TPs()[0]
	if err := tp.Generate(faketp.GenerateOptions{Namespaces: 1, Pods: 3, Services: 1}); err != nil {
		t.Fatal(err)
	}
	accept := "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	var tbl metav1.Table
	r := do(t, tp, "GET", "/api/v1/pods?limit=2", "", "", "Accept", accept)
	if err := json.Unmarshal(r.body, &tbl); err != nil || tbl.Kind != "Table" || len(tbl.Rows) != 2 || tbl.Continue == "" {
		t.Fatalf("table list: %v %s", err, r.body)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	// Arktos's columns, HashKey included (sample 74).
	if strings.Join(names, ",") != "Name,HashKey,Ready,Status,Restarts,Age,IP,Node,Nominated Node,Readiness Gates" {
		t.Fatalf("pod columns %v", names)
	}
	if row := tbl.Rows[0].Cells; row[0] != "pod-0" || row[1].(float64) <= 0 || row[3] != "Running" || row[4] != float64(0) || row[6] != "10.244.0.2" || row[7] != "node-0" {
		t.Fatalf("pod row %v", row)
	}
	if !bytes.Contains(tbl.Rows[0].Object.Raw, []byte(`"PartialObjectMetadata"`)) {
		t.Fatalf("row object %s", tbl.Rows[0].Object.Raw)
	}
	r = do(t, tp, "GET", "/api/v1/namespaces/gen-0/services/svc-0?includeObject=Object", "", "", "Accept", accept)
	if err := json.Unmarshal(r.body, &tbl); err != nil || len(tbl.Rows) != 1 || tbl.Rows[0].Cells[4] != "80/TCP" || !bytes.Contains(tbl.Rows[0].Object.Raw, []byte(`"kind":"Service"`)) {
		t.Fatalf("table get: %v %s", err, r.body)
	}
	// Plain JSON when the client prefers it.
	r = do(t, tp, "GET", "/api/v1/namespaces/gen-0/services/svc-0", "", "", "Accept", "application/json, application/json;as=Table;v=v1;g=meta.k8s.io")
	if !bytes.Contains(r.body, []byte(`"kind":"Service"`)) {
		t.Fatalf("plain get: %s", r.body)
	}
}

func TestSeedFormsAndDryRun(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 2})
	tp1, tp2 := c.TPs()[0], c.TPs()[1]
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s", "namespace": "ns", "tenant": "acme"}, "type": "Opaque",
	}}
	m := map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"name": "d", "namespace": "kube-system"},
		"status": map[string]any{"numberReady": 3}}
	if err := tp1.Seed(u, m); err != nil {
		t.Fatal(err)
	}
	if r := do(t, tp1, "GET", "/api/v1/tenants/acme/namespaces/ns/secrets/s", "", ""); r.code != 200 || !bytes.Contains(r.body, []byte(`"tenant":"acme"`)) {
		t.Fatalf("unstructured seed: %d %s", r.code, r.body)
	}
	if r := do(t, tp1, "GET", "/apis/apps/v1/namespaces/kube-system/daemonsets/d", "", ""); !bytes.Contains(r.body, []byte(`"numberReady":3`)) {
		t.Fatalf("seeding keeps status: %s", r.body)
	}
	for _, bad := range []any{42, map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "n"}},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "Bad_Name"}}} {
		if err := tp1.Seed(bad); err == nil {
			t.Errorf("seeding %v succeeded", bad)
		}
	}
	// SeedDir: files in the directory go everywhere, DIR/NAME to one TP.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tp2"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "all.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: all}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "tp2", "own.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own}\n"), 0o600)
	if err := c.SeedDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tp   *faketp.TP
		name string
		code int
	}{{tp1, "all", 200}, {tp2, "all", 200}, {tp1, "own", 404}, {tp2, "own", 200}} {
		if r := do(t, tc.tp, "GET", "/api/v1/namespaces/default/configmaps/"+tc.name, "", ""); r.code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.tp.Name(), tc.name, r.code, tc.code)
		}
	}
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("kind: [\n"), 0o600)
	if err := c.SeedDir(dir); err == nil || !strings.Contains(err.Error(), "broken.yaml") {
		t.Fatalf("a broken manifest: %v", err)
	}
	// dryRun validates and answers, and stores nothing.
	rv := tp1.Store().RV()
	if r := do(t, tp1, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All", jsonCT, `{"metadata":{"name":"dry"}}`); r.code != 201 {
		t.Fatalf("dry-run create: %d", r.code)
	}
	if r := do(t, tp1, "DELETE", "/api/v1/namespaces/default/configmaps/all?dryRun=All", "", ""); r.code != 200 {
		t.Fatalf("dry-run delete: %d", r.code)
	}
	if r := do(t, tp1, "GET", "/api/v1/namespaces/default/configmaps/dry", "", ""); r.code != 404 || tp1.Store().RV() != rv {
		t.Fatalf("dry run stored something: %d, rv %d -> %d", r.code, rv, tp1.Store().RV())
	}
}

func TestLifecycle(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 2})
	tp1, tp2 := c.TPs()[0], c.TPs()[1]
	if !strings.Contains(c.TenantServerKubeconfig(), ",") {
		t.Fatalf("--tenant-server-kubeconfig value %q", c.TenantServerKubeconfig())
	}
	cm := `{"metadata":{"name":"c"}}`
	// The tenant lives in tp1 only.
	if r := do(t, tp1, "POST", "/api/v1/tenants", jsonCT, `{"metadata":{"name":"acme"},"spec":{"storageClusterId":"0"}}`); r.code != 201 {
		t.Fatal(r.code)
	}
	for _, tc := range []struct {
		tp   *faketp.TP
		path string
		code int
	}{
		{tp1, "/api/v1/tenants/acme/namespaces/web/configmaps", 404}, // no namespace yet
		{tp1, "/api/v1/tenants/acme/namespaces", 201},                // creates web (body below)
		{tp1, "/api/v1/tenants/acme/namespaces/web/configmaps", 201},
		{tp2, "/api/v1/tenants/acme/namespaces", 404}, // acme is not in tp2
		{tp2, "/api/v1/namespaces/default/configmaps", 201},
		{tp2, "/api/v1/namespaces/nope/configmaps", 404},
	} {
		body := cm
		if strings.HasSuffix(tc.path, "/namespaces") {
			body = `{"metadata":{"name":"web"}}`
		}
		r := do(t, tc.tp, "POST", tc.path, jsonCT, body)
		if r.code != tc.code || (r.code == 404 && r.status.Reason != metav1.StatusReasonNotFound) {
			t.Fatalf("%s POST %s: %d %s, want %d", tc.tp.Name(), tc.path, r.code, r.status.Message, tc.code)
		}
	}
}

package faketp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

// listKeys GETs a list and returns its items as sorted "tenant/ns/name".
func listKeys(t *testing.T, tp *faketp.TP, path string) []string {
	t.Helper()
	r := do(t, tp, "GET", path, "", "")
	if r.code != 200 {
		t.Fatalf("GET %s: %d %s", path, r.code, r.body)
	}
	var l struct {
		Items []struct {
			Metadata struct{ Tenant, Namespace, Name string }
		}
	}
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	keys := []string{}
	for _, it := range l.Items {
		keys = append(keys, it.Metadata.Tenant+"/"+it.Metadata.Namespace+"/"+it.Metadata.Name)
	}
	sort.Strings(keys)
	return keys
}

// Arktos fact 1: /api/v1/tenants/all/{resource} lists and watches every
// tenant (samples 48a-48c, watch 61); below a namespace "all" is a tenant
// name no tenant has, so the list is empty (48d).
func TestTenantsAllPaths(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 1})
	tp := c.TPs()[0]
	mk := func(tenant, ns, name string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		tenancy.SetTenant(p, tenant)
		return p
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1"}}
	tenancy.SetTenant(ns, "acme")
	if err := tp.Seed(ns, mk("acme", "ns1", "web-1"), mk(tenancy.SystemTenant, "default", "sys-1")); err != nil {
		t.Fatal(err)
	}
	rv := tp.Store().RV()
	for _, tc := range []struct {
		path string
		want string
	}{
		{"/api/v1/tenants/all/pods", "acme/ns1/web-1 system/default/sys-1"},
		{"/api/v1/tenants/all/pods?labelSelector=x%3Dy", ""},
		{"/api/v1/tenants/all/namespaces/ns1/pods", ""},
		{"/api/v1/tenants/all/namespaces/default/pods", ""},
		{"/apis/apps/v1/tenants/all/daemonsets", ""},
	} {
		if got := strings.Join(listKeys(t, tp, tc.path), " "); got != tc.want {
			t.Errorf("GET %s: %q, want %q", tc.path, got, tc.want)
		}
	}
	if got := listKeys(t, tp, "/api/v1/tenants/all/namespaces"); !contains(got, "acme//ns1") || !contains(got, "system//kube-system") {
		t.Errorf("every tenant's namespaces: %v", got)
	}
	if r := do(t, tp, "GET", "/api/v1/tenants/all/namespaces/ns1/pods/web-1", "", ""); r.code != 404 {
		t.Errorf("an object under tenant all: %d", r.code)
	}
	// Writes: no tenant called "all" exists to write in.
	for _, p := range []string{"/api/v1/tenants/all/namespaces/ns1/pods", "/api/v1/tenants/all/namespaces"} {
		if r := do(t, tp, "POST", p, jsonCT, `{"metadata":{"name":"x"}}`); r.code != 404 || r.status.Message != `tenants "all" not found` {
			t.Errorf("POST %s: %d %s", p, r.code, r.status.Message)
		}
	}
	// A watch of every tenant sees changes in each.
	if err := tp.Seed(mk("zeta", "ns9", "z"), mk(tenancy.SystemTenant, "default", "sys-2")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range watchEvents(t, tp, fmt.Sprintf("/api/v1/tenants/all/pods?watch=1&resourceVersion=%d&timeoutSeconds=1", rv), 2) {
		var o struct{ Metadata struct{ Tenant, Name string } }
		_ = json.Unmarshal(e["object"], &o)
		got = append(got, evType(e)+" "+o.Metadata.Tenant+"/"+o.Metadata.Name)
	}
	if strings.Join(got, ",") != "ADDED zeta/z,ADDED system/sys-2" {
		t.Errorf("watch of every tenant: %v", got)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// listAt GETs a pod list and returns "name@rv ..." and the list's version.
func listAt(t *testing.T, tp *faketp.TP, q string) (string, string, metav1.Status) {
	t.Helper()
	r := do(t, tp, "GET", "/api/v1/namespaces/default/configmaps?"+q, "", "")
	if r.code != 200 {
		return "", "", r.status
	}
	var l corev1.ConfigMapList
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range l.Items {
		out = append(out, o.Name+"@"+o.ResourceVersion)
	}
	return strings.Join(out, " "), l.ResourceVersion, metav1.Status{}
}

// Lists honour resourceVersion as kube-apiserver 1.18 does, and a list at
// a compacted version is a plain 410 (sample 93).
func TestListResourceVersions(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{})
	tp := c.TPs()[0]
	cm := func(name, v string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"data":{"v":%q}}`, name, v)
	}
	post := func(body string) string {
		r := do(t, tp, "POST", "/api/v1/namespaces/default/configmaps", jsonCT, body)
		var o metav1.PartialObjectMetadata
		_ = json.Unmarshal(r.body, &o)
		return o.ResourceVersion
	}
	a := post(cm("a", "1"))
	b := post(cm("b", "1"))
	patched := do(t, tp, "PATCH", "/api/v1/namespaces/default/configmaps/a", "application/merge-patch+json", `{"data":{"v":"2"}}`)
	if patched.code != 200 {
		t.Fatal(patched.code)
	}
	now := fmt.Sprint(tp.Store().RV())
	for _, tc := range []struct{ q, items, rv string }{
		{"", "a@" + now + " b@" + b, now},
		{"resourceVersion=0&limit=1", "a@" + now + " b@" + b, now}, // the watch cache ignores the limit
		{"resourceVersion=" + a, "a@" + now + " b@" + b, now},      // not older than a: the latest
		{"resourceVersion=" + a + "&limit=5", "a@" + a, a},         // exactly a, from the history
		{"resourceVersion=" + b + "&resourceVersionMatch=Exact", "a@" + a + " b@" + b, b},
		{"resourceVersion=" + b + "&resourceVersionMatch=NotOlderThan", "a@" + now + " b@" + b, now},
	} {
		items, rv, st := listAt(t, tp, tc.q)
		if items != tc.items || rv != tc.rv {
			t.Errorf("?%s: items %q at %s (%s), want %q at %s", tc.q, items, rv, st.Message, tc.items, tc.rv)
		}
	}
	// Pages of a paged list are one snapshot, even when objects change.
	r := do(t, tp, "GET", "/api/v1/namespaces/default/configmaps?limit=1", "", "")
	var page corev1.ConfigMapList
	_ = json.Unmarshal(r.body, &page)
	post(cm("aa", "1")) // sorts between a and b
	r = do(t, tp, "GET", "/api/v1/namespaces/default/configmaps?limit=5&continue="+page.Continue, "", "")
	var rest corev1.ConfigMapList
	if err := json.Unmarshal(r.body, &rest); err != nil || len(rest.Items) != 1 || rest.Items[0].Name != "b" || rest.ResourceVersion != page.ResourceVersion {
		t.Fatalf("second page: %v %s", err, r.body)
	}
	for _, tc := range []struct {
		q      string
		code   int
		reason metav1.StatusReason
	}{
		{"resourceVersion=99999&limit=1", 410, metav1.StatusReasonExpired},
		{"resourceVersion=99999", 410, metav1.StatusReasonExpired},
		{"resourceVersion=x", 400, metav1.StatusReasonBadRequest},
		{"resourceVersionMatch=Exact", 422, metav1.StatusReasonInvalid},
		{"resourceVersion=0&resourceVersionMatch=Exact", 422, metav1.StatusReasonInvalid},
		{"resourceVersion=" + a + "&continue=" + page.Continue, 400, metav1.StatusReasonBadRequest},
	} {
		if r := do(t, tp, "GET", "/api/v1/namespaces/default/configmaps?"+tc.q, "", ""); r.code != tc.code || r.status.Reason != tc.reason {
			t.Errorf("?%s: %d %s, want %d %s", tc.q, r.code, r.status.Reason, tc.code, tc.reason)
		}
	}
	// TP.Compact is the etcd compaction: older versions are gone.
	tp.Compact()
	r = do(t, tp, "GET", "/api/v1/namespaces/default/configmaps?resourceVersion="+a+"&limit=1", "", "")
	if r.code != 410 || r.status.Reason != metav1.StatusReasonExpired || r.status.Message != "The resourceVersion for the provided list is too old." {
		t.Fatalf("list at a compacted version: %d %+v", r.code, r.status)
	}
	if r := do(t, tp, "GET", "/api/v1/namespaces/default/configmaps?limit=5&continue="+page.Continue, "", ""); r.code != 410 {
		t.Fatalf("continue after compaction: %d", r.code)
	}
}

// The watch cache keeps 100 events per resource: a watch from an older
// version is a 200 stream whose only event is an ERROR with 410 Expired
// (sample 92); with fewer events it reaches back to the TP's start, so a
// watch from version 1 replays (sample 67).
func TestWatchWindowPerResource(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{})
	tp := c.TPs()[0]
	r := do(t, tp, "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":{"name":"churn"},"data":{"n":"0"}}`)
	var created metav1.PartialObjectMetadata
	_ = json.Unmarshal(r.body, &created)
	w := openWatch(t, tp, "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1")
	do(t, tp, "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":{"name":"sentinel"}}`)
	if evs := w.until("sentinel"); len(evs) != 1 || evType(evs[0]) != "ADDED" {
		t.Fatalf("replay from version 1: %v", evs)
	}
	for n := 1; n <= 150; n++ {
		if r := do(t, tp, "PATCH", "/api/v1/namespaces/default/configmaps/churn", "application/merge-patch+json", fmt.Sprintf(`{"data":{"n":"%d"}}`, n)); r.code != 200 {
			t.Fatal(r.code)
		}
	}
	// 151 configmap events: the window holds the last 100.
	evs := watchEvents(t, tp, "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion="+created.ResourceVersion, 10)
	var st metav1.Status
	rv := tp.Store().RV()
	if len(evs) != 1 || evType(evs[0]) != "ERROR" || json.Unmarshal(evs[0]["object"], &st) != nil || st.Code != 410 || st.Reason != metav1.StatusReasonExpired ||
		st.Message != fmt.Sprintf("too old resource version: %s (%d)", created.ResourceVersion, rv-100) {
		t.Fatalf("watch from before the window: %v %+v", evs, st)
	}
	// The last 100 are there; another resource's window is untouched.
	w = openWatch(t, tp, fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%d", rv-100))
	ws := openWatch(t, tp, "/api/v1/namespaces/default/secrets?watch=1&resourceVersion=1")
	do(t, tp, "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":{"name":"sentinel2"}}`)
	do(t, tp, "POST", "/api/v1/namespaces/default/secrets", jsonCT, `{"metadata":{"name":"sentinel"}}`)
	if evs := w.until("sentinel2"); len(evs) != 100 {
		t.Fatalf("watch from the window's start: %d events", len(evs))
	}
	if evs := ws.until("sentinel"); len(evs) != 0 {
		t.Fatalf("secrets from version 1: %v", evs)
	}
}

// watchStream is an open raw watch.
type watchStream struct {
	t  *testing.T
	sc *bufio.Scanner
}

// openWatch starts a raw watch; it is open (registered with the store)
// when openWatch returns, and closed at the end of the test.
func openWatch(t *testing.T, tp *faketp.TP, q string) *watchStream {
	t.Helper()
	res, err := http.Get(tp.URL() + q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("watch %s: %d %s", q, res.StatusCode, b)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	return &watchStream{t: t, sc: sc}
}

// until reads events up to the first whose object is named name (a
// sentinel the test wrote after opening the watch) and returns those
// before it: so it knows that nothing else came, without waiting.
func (w *watchStream) until(name string) []map[string]json.RawMessage {
	w.t.Helper()
	var out []map[string]json.RawMessage
	for w.sc.Scan() {
		var ev map[string]json.RawMessage
		var o metav1.PartialObjectMetadata
		if err := json.Unmarshal(w.sc.Bytes(), &ev); err != nil {
			w.t.Fatalf("event %q: %v", w.sc.Text(), err)
		}
		if json.Unmarshal(ev["object"], &o) == nil && o.Name == name {
			return out
		}
		out = append(out, ev)
	}
	w.t.Fatalf("the watch ended before %s came, after %d events", name, len(out))
	return nil
}

// Arktos fact 2 and 4: version 1.0 (sample 00); discovery marks resources
// tenanted (01, 02) and has no discovery.k8s.io group; objects carry
// metadata.hashKey and selfLink; list items have no kind (all samples).
func TestVersionDiscoveryAndObjectMeta(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{})
	tp := c.TPs()[0]
	var v struct{ Major, Minor, GitVersion string }
	if r := do(t, tp, "GET", "/version", "", ""); json.Unmarshal(r.body, &v) != nil || v.Major != "1" || v.Minor != "0" || !strings.HasPrefix(v.GitVersion, "v1.0.0-arktos") {
		t.Fatalf("version: %s", r.body)
	}
	type res struct {
		Name                 string
		Namespaced, Tenanted bool
		Verbs                []string
		StorageVersionHash   string
	}
	var core struct{ Resources []res }
	if err := json.Unmarshal(do(t, tp, "GET", "/api/v1", "", "").body, &core); err != nil {
		t.Fatal(err)
	}
	got := map[string]res{}
	for _, r := range core.Resources {
		got[r.Name] = r
	}
	for name, want := range map[string]res{
		"tenants":     {Namespaced: false, Tenanted: false},
		"namespaces":  {Namespaced: false, Tenanted: true},
		"pods":        {Namespaced: true, Tenanted: true, StorageVersionHash: "xPOwRZ+Yhw8="},
		"pods/status": {Namespaced: true, Tenanted: true},
	} {
		g := got[name]
		if g.Name != name || g.Namespaced != want.Namespaced || g.Tenanted != want.Tenanted || want.StorageVersionHash != "" && g.StorageVersionHash != want.StorageVersionHash {
			t.Errorf("discovery of %s: %+v, want %+v", name, g, want)
		}
	}
	if contains(got["services"].Verbs, "deletecollection") || do(t, tp, "DELETE", "/api/v1/namespaces/default/services", "", "").code != 405 {
		t.Error("services serve deletecollection; kube-apiserver 1.18 does not")
	}
	// No EndpointSlices, unless asked for.
	if r := do(t, tp, "GET", "/apis", "", ""); strings.Contains(string(r.body), "discovery.k8s.io") {
		t.Errorf("/apis lists discovery.k8s.io: %s", r.body)
	}
	for _, p := range []string{"/apis/discovery.k8s.io", "/apis/discovery.k8s.io/v1", "/apis/discovery.k8s.io/v1/endpointslices", "/openapi/v3/apis/discovery.k8s.io/v1"} {
		if r := do(t, tp, "GET", p, "", ""); r.code != 404 {
			t.Errorf("GET %s: %d", p, r.code)
		}
	}
	with := faketp.StartT(t, faketp.Options{EndpointSlices: true}).TPs()[0]
	if r := do(t, with, "GET", "/apis", "", ""); !strings.Contains(string(r.body), "discovery.k8s.io") {
		t.Errorf("/apis with EndpointSlices: %s", r.body)
	}
	// Object metadata.
	r := do(t, tp, "POST", "/api/v1/namespaces/default/configmaps", jsonCT, `{"metadata":{"name":"c","generation":7}}`)
	var o map[string]json.RawMessage
	var md map[string]any
	if err := json.Unmarshal(r.body, &o); err != nil || json.Unmarshal(o["metadata"], &md) != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(r.body), `{"kind":"ConfigMap","apiVersion":"v1",`) || md["selfLink"] != "/api/v1/namespaces/default/configmaps/c" ||
		md["tenant"] != "system" || md["generation"] != nil {
		t.Errorf("created object: %s", r.body)
	}
	if h, ok := md["hashKey"].(float64); !ok || h <= 0 {
		t.Errorf("hashKey %v", md["hashKey"])
	}
	if r := do(t, tp, "GET", "/api/v1/namespaces/default/configmaps", "", ""); strings.Contains(string(r.body), `"items":[{"kind"`) ||
		!strings.Contains(string(r.body), `"selfLink":"/api/v1/namespaces/default/configmaps"`) {
		t.Errorf("list: %s", r.body)
	}
}

// step is one request of a scripted test and what Arktos answers.
type step struct {
	name, method, path, body string
	code                     int
	reason                   metav1.StatusReason
	message                  string // for errors; "" skips the check
}

func runSteps(t *testing.T, tp *faketp.TP, steps []step) {
	t.Helper()
	for _, s := range steps {
		ct := ""
		if s.body != "" {
			ct = jsonCT
		}
		r := do(t, tp, s.method, s.path, ct, s.body)
		if r.code != s.code || r.status.Reason != s.reason || (s.message != "" && r.status.Message != s.message) {
			t.Errorf("%s: %s %s: %d %s %q, want %d %s %q", s.name, s.method, s.path, r.code, r.status.Reason, r.status.Message, s.code, s.reason, s.message)
		}
	}
}

// Arktos facts 3, 4 and 5: tenants need a storageClusterId, objects need
// their tenant and namespace, and errors are worded as Arktos words them.
func TestLifecycleAndErrors(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Controllers: []string{}}) // as responses/
	tp := c.TPs()[0]
	pod := func(name, tenant string) string {
		tn := ""
		if tenant != "" {
			tn = `,"tenant":"` + tenant + `"`
		}
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"` + tn + `},"spec":{"containers":[{"name":"c","image":"nginx:1.19"}]}}`
	}
	ds := `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`
	runSteps(t, tp, []step{
		{name: "no system Tenant object without the tenant controller (11)", method: "GET", path: "/api/v1/tenants/system", code: 404, reason: metav1.StatusReasonNotFound, message: `tenants "system" not found`},
		{name: "system namespaces exist from the start (20)", method: "GET", path: "/api/v1/namespaces/kube-node-lease", code: 200},
		{name: "storageClusterId is required (14)", method: "POST", path: "/api/v1/tenants", body: `{"metadata":{"name":"beta"},"spec":{}}`, code: 422, reason: metav1.StatusReasonInvalid,
			message: `Tenant "beta" is invalid: spec.storageClusterId: Required value: must specify storage cluster id`},
		{name: "storageClusterId from 0 to 63", method: "POST", path: "/api/v1/tenants", body: `{"metadata":{"name":"beta"},"spec":{"storageClusterId":"64"}}`, code: 422, reason: metav1.StatusReasonInvalid,
			message: `Tenant "beta" is invalid: spec.storageClusterId: Invalid value: "64": must be a storage cluster id from "0" to "63"`},
		{name: "tenant create (12)", method: "POST", path: "/api/v1/tenants", body: `{"metadata":{"name":"acme"},"spec":{"storageClusterId":"0"}}`, code: 201},
		{name: "duplicate tenant (13)", method: "POST", path: "/api/v1/tenants", body: `{"metadata":{"name":"acme"},"spec":{"storageClusterId":"0"}}`, code: 409, reason: metav1.StatusReasonAlreadyExists, message: `tenants "acme" already exists`},
		{name: "namespace in an unknown tenant (25)", method: "POST", path: "/api/v1/tenants/nosuch/namespaces", body: `{"metadata":{"name":"ns1"}}`, code: 404, reason: metav1.StatusReasonNotFound, message: `tenants "nosuch" not found`},
		{name: "namespace create (23)", method: "POST", path: "/api/v1/tenants/acme/namespaces", body: `{"metadata":{"name":"ns1"}}`, code: 201},
		{name: "object in a missing namespace (32)", method: "POST", path: "/api/v1/tenants/acme/namespaces/nope/services", body: `{"metadata":{"name":"web"},"spec":{"ports":[{"port":80}]}}`, code: 404, reason: metav1.StatusReasonNotFound, message: `namespaces "nope" not found`},
		{name: "pod create (40)", method: "POST", path: "/api/v1/tenants/acme/namespaces/ns1/pods", body: pod("web-1", ""), code: 201},
		{name: "tenant mismatch (42)", method: "POST", path: "/api/v1/tenants/acme/namespaces/ns1/pods", body: pod("web-x", "other"), code: 400, reason: metav1.StatusReasonBadRequest,
			message: "the tenant of the provided object does not match the tenant sent on the request"},
		{name: "duplicate pod (43)", method: "POST", path: "/api/v1/tenants/acme/namespaces/ns1/pods", body: pod("web-1", ""), code: 409, reason: metav1.StatusReasonAlreadyExists, message: `pods "web-1" already exists`},
		{name: "a short path is the caller's tenant (49)", method: "GET", path: "/api/v1/namespaces/ns1/pods/web-1", code: 404, reason: metav1.StatusReasonNotFound, message: `pods "web-1" not found`},
		{name: "get in an unknown tenant (52)", method: "GET", path: "/api/v1/tenants/nosuch/namespaces/ns1/pods/web-1", code: 404, reason: metav1.StatusReasonNotFound, message: `pods "web-1" not found`},
		{name: "list in an unknown tenant (83)", method: "GET", path: "/api/v1/tenants/nosuch/namespaces/ns1/pods", code: 200},
		{name: "stale resourceVersion (56)", method: "PUT", path: "/api/v1/tenants/acme/namespaces/ns1/pods/web-1", body: `{"metadata":{"name":"web-1","resourceVersion":"1"}}`, code: 409, reason: metav1.StatusReasonConflict,
			message: `Operation cannot be fulfilled on pods "web-1": the object has been modified; please apply your changes to the latest version and try again`},
		{name: "DaemonSet outside system (72)", method: "POST", path: "/apis/apps/v1/tenants/acme/namespaces/ns1/daemonsets", body: ds, code: 403, reason: metav1.StatusReasonForbidden,
			message: `daemonsets.apps "ds" is forbidden: only system tenant is allowed to have DaemonSet`},
		{name: "DaemonSet in system (73)", method: "POST", path: "/apis/apps/v1/namespaces/kube-system/daemonsets", body: ds, code: 201},
	})
	// What the server adds to tenants and namespaces (12, 23).
	var tenant, ns struct {
		Metadata map[string]any
		Spec     struct {
			Finalizers       []string
			StorageClusterID string `json:"storageClusterId"`
		}
		Status struct{ Phase string }
	}
	_ = json.Unmarshal(do(t, tp, "GET", "/api/v1/tenants/acme", "", "").body, &tenant)
	_ = json.Unmarshal(do(t, tp, "GET", "/api/v1/tenants/acme/namespaces/ns1", "", "").body, &ns)
	if _, has := tenant.Metadata["tenant"]; has || fmt.Sprint(tenant.Spec.Finalizers) != "[arktos]" || tenant.Status.Phase != "Active" || tenant.Spec.StorageClusterID != "0" {
		t.Errorf("tenant: %+v", tenant)
	}
	if ns.Metadata["tenant"] != "acme" || fmt.Sprint(ns.Spec.Finalizers) != "[kubernetes]" || ns.Status.Phase != "Active" {
		t.Errorf("namespace: %+v", ns)
	}
	// Seeding is never refused: it creates the tenant and namespace.
	p := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "web"}}
	tenancy.SetTenant(p, "zeta")
	if err := tp.Seed(p); err != nil {
		t.Fatal(err)
	}
	runSteps(t, tp, []step{
		{name: "seeded tenant", method: "GET", path: "/api/v1/tenants/zeta", code: 200},
		{name: "seeded namespace", method: "GET", path: "/api/v1/tenants/zeta/namespaces/web", code: 200},
	})
}

// Arktos fact 1: a short path is the caller's tenant for every verb
// (samples 34, 37, 44, 48, 49, 68).
func TestShortPathIsCallersTenant(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{})
	tp := c.TPs()[0]
	if err := tp.Seed(namespace("acme", "default"), namespace("acme", "ns1")); err != nil {
		t.Fatal(err)
	}
	_, cfg, err := tp.KubeconfigFor(faketp.Identity{Name: "alice", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	alice := "Bearer " + cfg.BearerToken
	for _, tc := range []struct{ auth, name, tenant string }{{"", "sys-1", "system"}, {alice, "web-1", "acme"}} {
		var hdr []string
		if tc.auth != "" {
			hdr = []string{"Authorization", tc.auth}
		}
		r := do(t, tp, "POST", "/api/v1/namespaces/default/pods", jsonCT, `{"metadata":{"name":"`+tc.name+`"}}`, hdr...)
		if r.code != 201 || !strings.Contains(string(r.body), `"tenant":"`+tc.tenant+`"`) {
			t.Fatalf("short-path create as %q: %d %s", tc.tenant, r.code, r.body)
		}
	}
	if got := strings.Join(listKeys(t, tp, "/api/v1/pods"), " "); got != "system/default/sys-1" {
		t.Errorf("the admin's short-path list: %s", got)
	}
	if got := strings.Join(listKeys(t, tp, "/api/v1/tenants/all/pods"), " "); got != "acme/default/web-1 system/default/sys-1" {
		t.Errorf("every tenant: %s", got)
	}
	if r := do(t, tp, "GET", "/api/v1/namespaces/default/pods/web-1", "", "", "Authorization", alice); r.code != 200 {
		t.Errorf("alice's short-path get: %d", r.code)
	}
	if r := do(t, tp, "GET", "/api/v1/namespaces/default/pods/web-1", "", ""); r.code != 404 {
		t.Errorf("the admin's short-path get of alice's pod: %d", r.code)
	}
	// A short-path watch is the caller's tenant too (68).
	w := openWatch(t, tp, fmt.Sprintf("/api/v1/pods?watch=1&resourceVersion=%d", tp.Store().RV()))
	do(t, tp, "POST", "/api/v1/namespaces/default/pods", jsonCT, `{"metadata":{"name":"web-2"}}`, "Authorization", alice)
	do(t, tp, "POST", "/api/v1/namespaces/default/pods", jsonCT, `{"metadata":{"name":"sentinel"}}`)
	if evs := w.until("sentinel"); len(evs) != 0 {
		t.Errorf("the admin's short-path watch saw another tenant: %v", evs)
	}
}

// jsonAt reads the value at a dotted path of a JSON object ("spec.ports.0.protocol").
func jsonAt(t *testing.T, b []byte, path string) string {
	t.Helper()
	var cur any
	if err := json.Unmarshal(b, &cur); err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			var i int
			fmt.Sscan(p, &i)
			if i >= len(c) {
				return "<none>"
			}
			cur = c[i]
		default:
			return "<none>"
		}
	}
	if cur == nil {
		return "<none>"
	}
	if s, ok := cur.(string); ok {
		return s
	}
	b, _ = json.Marshal(cur)
	return string(b)
}

// Server defaults as Arktos returns them (samples 30, 36, 40, 71, 73).
func TestServerDefaults(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{})
	tp := c.TPs()[0]
	create := func(path, body string) []byte {
		r := do(t, tp, "POST", path, jsonCT, body)
		if r.code != 201 {
			t.Fatalf("POST %s: %d %s", path, r.code, r.body)
		}
		return r.body
	}
	pod := create("/api/v1/namespaces/default/pods", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx:1.19","ports":[{"containerPort":80}]},{"name":"d","image":"busybox","resources":{"limits":{"cpu":"1"}}}]}}`)
	svc := create("/api/v1/namespaces/default/services", `{"metadata":{"name":"s"},"spec":{"selector":{"a":"b"},"ports":[{"name":"http","port":80}]}}`)
	ep := create("/api/v1/namespaces/default/endpoints", `{"metadata":{"name":"e"},"subsets":[{"addresses":[{"ip":"10.0.0.1"}],"ports":[{"port":80}]}]}`)
	sec := create("/api/v1/namespaces/default/secrets", `{"metadata":{"name":"sec"},"stringData":{"k":"v"}}`)
	ds := create("/apis/apps/v1/namespaces/kube-system/daemonsets", `{"metadata":{"name":"ds"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`)
	for _, tc := range []struct {
		obj        []byte
		path, want string
	}{
		{pod, "spec.containers.0.ports.0.protocol", "TCP"},
		{pod, "spec.containers.0.resources", "{}"},
		{pod, "spec.containers.0.terminationMessagePath", "/dev/termination-log"},
		{pod, "spec.containers.0.terminationMessagePolicy", "File"},
		{pod, "spec.containers.0.imagePullPolicy", "IfNotPresent"},
		{pod, "spec.containers.1.imagePullPolicy", "Always"},
		{pod, "spec.workloadInfo", `[{"image":"nginx:1.19","name":"c","resources":{}},{"image":"busybox","name":"d","resources":{"limits":{"cpu":"1"}}}]`},
		{pod, "spec.restartPolicy", "Always"},
		{pod, "spec.terminationGracePeriodSeconds", "30"},
		{pod, "spec.dnsPolicy", "ClusterFirst"},
		{pod, "spec.securityContext", "{}"},
		{pod, "spec.schedulerName", "default-scheduler"},
		{pod, "spec.tolerations", `[{"effect":"NoExecute","key":"node.kubernetes.io/not-ready","operator":"Exists","tolerationSeconds":300},{"effect":"NoExecute","key":"node.kubernetes.io/unreachable","operator":"Exists","tolerationSeconds":300}]`},
		{pod, "spec.priority", "0"},
		{pod, "spec.enableServiceLinks", "true"},
		{pod, "spec.serviceAccountName", "<none>"}, // no ServiceAccount admission
		{pod, "status.phase", "Pending"},
		{pod, "status.qosClass", "Burstable"},
		{svc, "spec.ports.0.protocol", "TCP"},
		{svc, "spec.ports.0.targetPort", "80"},
		{svc, "spec.type", "ClusterIP"},
		{svc, "spec.sessionAffinity", "None"},
		{svc, "spec.clusterIPs", "<none>"},
		{svc, "status", `{"loadBalancer":{}}`},
		{ep, "subsets.0.ports.0.protocol", "TCP"},
		{sec, "data.k", "dg=="},
		{sec, "stringData", "<none>"},
		{sec, "type", "Opaque"},
		{ds, "metadata.generation", "1"},
		{ds, "spec.updateStrategy", `{"rollingUpdate":{"maxUnavailable":1},"type":"RollingUpdate"}`},
		{ds, "spec.revisionHistoryLimit", "10"},
		{ds, "spec.template.spec.containers.0.imagePullPolicy", "Always"},
		{ds, "spec.template.spec.enableServiceLinks", "<none>"},
		{ds, "status", `{"currentNumberScheduled":0,"desiredNumberScheduled":0,"numberMisscheduled":0,"numberReady":0}`},
	} {
		if got := jsonAt(t, tc.obj, tc.path); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.path, got, tc.want)
		}
	}
	if !strings.Contains(string(ds), `"deprecated.daemonset.template.generation":"1"`) || !strings.Contains(string(ds), `"creationTimestamp":null`) {
		t.Errorf("daemonset: %s", ds)
	}
}

// Arktos fact 3 with the controller manager: the tenant controller makes
// the Tenant "system" and every tenant's default, kube-system and
// kube-public namespaces (responses-with-kcm 11, 24, 27).
func TestTenantController(t *testing.T) {
	for _, tc := range []struct {
		controllers  []string
		system, dflt int
	}{{nil, 200, 409}, {[]string{}, 404, 201}, {[]string{faketp.EndpointsController}, 404, 201}} {
		tp := faketp.StartT(t, faketp.Options{Controllers: tc.controllers}).TPs()[0]
		runSteps(t, tp, []step{
			{name: fmt.Sprintf("%v: the Tenant system", tc.controllers), method: "GET", path: "/api/v1/tenants/system", code: tc.system, reason: map[int]metav1.StatusReason{404: metav1.StatusReasonNotFound}[tc.system]},
			{name: "tenant", method: "POST", path: "/api/v1/tenants", body: `{"metadata":{"name":"acme"},"spec":{"storageClusterId":"0"}}`, code: 201},
			{name: fmt.Sprintf("%v: default in a new tenant", tc.controllers), method: "POST", path: "/api/v1/tenants/acme/namespaces", body: `{"metadata":{"name":"default"}}`, code: tc.dflt,
				reason: map[int]metav1.StatusReason{409: metav1.StatusReasonAlreadyExists}[tc.dflt]},
		})
	}
	tp := faketp.StartT(t, faketp.Options{}).TPs()[0]
	if err := tp.Seed(namespace("zeta", "web")); err != nil { // seeding makes tenant zeta
		t.Fatal(err)
	}
	if got := strings.Join(listKeys(t, tp, "/api/v1/tenants/zeta/namespaces"), " "); got != "zeta//default zeta//kube-public zeta//kube-system zeta//web" {
		t.Fatalf("a seeded tenant's namespaces: %s", got)
	}
}

// Pods without a kubelet: a Binding (sample 95), a status patch (96) and
// the endpoints controller (97 with kcm); graceful deletion (60, 65).
func TestPodLifecycleAndEndpointsController(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{})
	tp := c.TPs()[0]
	if err := tp.Seed(namespace("acme", "ns1")); err != nil {
		t.Fatal(err)
	}
	const base = "/api/v1/tenants/acme/namespaces/ns1/"
	ep := func() []byte { return do(t, tp, "GET", base+"endpoints/web", "", "").body }
	runSteps(t, tp, []step{
		{name: "service", method: "POST", path: base + "services", body: `{"metadata":{"name":"web","labels":{"l":"v"}},"spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":"web"},{"name":"metrics","port":9090}]}}`, code: 201},
		{name: "the controller made the Endpoints (36 with kcm)", method: "POST", path: base + "endpoints", body: `{"metadata":{"name":"web"}}`, code: 409, reason: metav1.StatusReasonAlreadyExists},
		{name: "pod", method: "POST", path: base + "pods", body: `{"metadata":{"name":"web-1","labels":{"app":"web"}},"spec":{"hostname":"h1","subdomain":"web","containers":[{"name":"c","image":"nginx:1.19","ports":[{"name":"web","containerPort":8080}]}]}}`, code: 201},
		{name: "other pod", method: "POST", path: base + "pods", body: `{"metadata":{"name":"web-2","labels":{"app":"web"}},"spec":{"nodeName":"node-b","containers":[{"name":"c","image":"nginx:1.19"}]}}`, code: 201},
	})
	if got := jsonAt(t, ep(), "subsets"); got != "<none>" {
		t.Fatalf("Endpoints before any pod runs: %s", got)
	}
	if got := jsonAt(t, ep(), "metadata.labels"); got != `{"l":"v"}` {
		t.Fatalf("Endpoints labels: %s", got)
	}
	runSteps(t, tp, []step{
		{name: "binding (95)", method: "POST", path: base + "pods/web-1/binding", body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web-1"},"target":{"apiVersion":"v1","kind":"Node","name":"node-a"}}`, code: 201},
		{name: "binding a bound pod", method: "POST", path: base + "pods/web-1/binding", body: `{"metadata":{"name":"web-1"},"target":{"name":"node-b"}}`, code: 409, reason: metav1.StatusReasonConflict,
			message: `Operation cannot be fulfilled on pods/binding "web-1": pod web-1 is already assigned to node "node-a"`},
		{name: "binding mismatch", method: "POST", path: base + "pods/web-2/binding", body: `{"metadata":{"name":"web-1"},"target":{"name":"node-b"}}`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "GET binding", method: "GET", path: base + "pods/web-1/binding", code: 405, reason: metav1.StatusReasonMethodNotAllowed},
	})
	if got := jsonAt(t, do(t, tp, "GET", base+"pods/web-1", "", "").body, "spec.nodeName"); got != "node-a" {
		t.Fatalf("nodeName after binding: %s", got)
	}
	patch := func(pod, body string) {
		if r := do(t, tp, "PATCH", base+"pods/"+pod+"/status", "application/merge-patch+json", body); r.code != 200 {
			t.Fatalf("status patch: %d %s", r.code, r.body)
		}
	}
	patch("web-2", `{"status":{"phase":"Running","podIP":"10.244.0.6"}}`)
	patch("web-1", `{"status":{"phase":"Running","podIP":"10.244.0.5","podIPs":[{"ip":"10.244.0.5"}],"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
	pod := do(t, tp, "GET", base+"pods/web-1", "", "").body
	e := ep()
	for _, tc := range []struct{ path, want string }{
		{"subsets.0.addresses.0.ip", "10.244.0.5"},
		{"subsets.0.addresses.0.nodeName", "node-a"},
		{"subsets.0.addresses.0.hostname", "h1"},
		{"subsets.0.addresses.0.targetRef.kind", "Pod"},
		{"subsets.0.addresses.0.targetRef.tenant", "acme"},
		{"subsets.0.addresses.0.targetRef.uid", jsonAt(t, pod, "metadata.uid")},
		{"subsets.0.addresses.0.targetRef.resourceVersion", jsonAt(t, pod, "metadata.resourceVersion")},
		{"subsets.0.ports", `[{"name":"http","port":8080,"protocol":"TCP"},{"name":"metrics","port":9090,"protocol":"TCP"}]`},
		{"subsets.1.notReadyAddresses.0.ip", "10.244.0.6"}, // not Ready; no port named web
		{"subsets.1.ports", `[{"name":"metrics","port":9090,"protocol":"TCP"}]`},
		{"metadata.annotations", `{"endpoints.kubernetes.io/last-change-trigger-time":"2026-01-01T00:00:00Z"}`},
	} {
		if got := jsonAt(t, e, tc.path); got != tc.want {
			t.Errorf("Endpoints %s: %s, want %s\n%s", tc.path, got, tc.want, e)
		}
	}
	if got := jsonAt(t, pod, "status.podIPs"); got != "<none>" {
		t.Errorf("Arktos has no status.podIPs: %s", got)
	}
	// Deleting a pod: a MODIFIED event with the deletion timestamp, then
	// DELETED; the controller drops the address.
	w := openWatch(t, tp, fmt.Sprintf(base+"pods?watch=1&resourceVersion=%d", tp.Store().RV()))
	r := do(t, tp, "DELETE", base+"pods/web-2?gracePeriodSeconds=0", "", "")
	if r.code != 200 || jsonAt(t, r.body, "metadata.deletionGracePeriodSeconds") != "0" || jsonAt(t, r.body, "metadata.deletionTimestamp") == "<none>" {
		t.Fatalf("DELETE answer: %d %s", r.code, r.body)
	}
	do(t, tp, "POST", base+"pods", jsonCT, `{"metadata":{"name":"sentinel"}}`)
	var types []string
	for _, ev := range w.until("sentinel") {
		types = append(types, evType(ev)+" "+jsonAt(t, ev["object"], "metadata.deletionGracePeriodSeconds"))
	}
	if strings.Join(types, ",") != "MODIFIED 0,DELETED 0" {
		t.Errorf("deletion events: %v", types)
	}
	if got := jsonAt(t, ep(), "subsets.1"); got != "<none>" {
		t.Errorf("Endpoints after deleting web-2: %s", ep())
	}
	// Selector-less and ExternalName services are the clients'; a deleted
	// service's Endpoints go.
	runSteps(t, tp, []step{
		{name: "selector-less service", method: "POST", path: base + "services", body: `{"metadata":{"name":"manual"},"spec":{"ports":[{"port":80}]}}`, code: 201},
		{name: "its Endpoints are the client's", method: "POST", path: base + "endpoints", body: `{"metadata":{"name":"manual"},"subsets":[{"addresses":[{"ip":"192.0.2.1"}],"ports":[{"port":80}]}]}`, code: 201},
		{name: "ExternalName service", method: "POST", path: base + "services", body: `{"metadata":{"name":"ext"},"spec":{"type":"ExternalName","externalName":"example.com","selector":{"app":"web"}}}`, code: 201},
		{name: "no Endpoints for it", method: "GET", path: base + "endpoints/ext", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "delete the service", method: "DELETE", path: base + "services/web", code: 200},
		{name: "its Endpoints went", method: "GET", path: base + "endpoints/web", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "the manual Endpoints stay", method: "GET", path: base + "endpoints/manual", code: 200},
	})
}

// Options.EndpointSlices: discovery.k8s.io/v1 EndpointSlices mirrored from
// the Endpoints, for clients such as CoreDNS (Arktos has none).
func TestEndpointSlicesMirror(t *testing.T) {
	tp := faketp.StartT(t, faketp.Options{EndpointSlices: true}).TPs()[0]
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns1", Labels: map[string]string{"app": "web"}},
		Spec:   corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.5", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	tenancy.SetTenant(pod, "acme")
	if err := tp.Seed(pod); err != nil {
		t.Fatal(err)
	}
	const base = "/api/v1/tenants/acme/namespaces/ns1/"
	const slices = "/apis/discovery.k8s.io/v1/tenants/acme/namespaces/ns1/endpointslices/"
	runSteps(t, tp, []step{
		{name: "service", method: "POST", path: base + "services", body: `{"metadata":{"name":"web","labels":{"l":"v"}},"spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80}]}}`, code: 201},
		{name: "manual service", method: "POST", path: base + "services", body: `{"metadata":{"name":"db"},"spec":{"ports":[{"port":5432}]}}`, code: 201},
		{name: "dual-stack manual Endpoints", method: "POST", path: base + "endpoints", body: `{"metadata":{"name":"db"},"subsets":[{"addresses":[{"ip":"192.0.2.1"},{"ip":"2001:db8::1"}],"notReadyAddresses":[{"ip":"192.0.2.2"}],"ports":[{"port":5432}]}]}`, code: 201},
		{name: "a client's own slice", method: "POST", path: slices[:len(slices)-1], body: `{"metadata":{"name":"own","labels":{"kubernetes.io/service-name":"db"}},"addressType":"IPv4","endpoints":[{"addresses":["192.0.2.9"]}]}`, code: 201},
	})
	web := do(t, tp, "GET", slices+"web-ipv4", "", "").body
	for _, tc := range []struct{ path, want string }{
		{"metadata.labels", `{"endpointslice.kubernetes.io/managed-by":"endpointslicemirroring-controller.k8s.io","kubernetes.io/service-name":"web","l":"v"}`},
		{"addressType", "IPv4"},
		{"endpoints.0.addresses", `["10.244.0.5"]`},
		{"endpoints.0.conditions", `{"ready":true,"serving":true,"terminating":false}`},
		{"endpoints.0.nodeName", "node-a"},
		{"endpoints.0.targetRef.name", "web-1"},
		{"ports", `[{"name":"http","port":80,"protocol":"TCP"}]`},
	} {
		if got := jsonAt(t, web, tc.path); got != tc.want {
			t.Errorf("slice web-ipv4 %s: %s, want %s", tc.path, got, tc.want)
		}
	}
	if got := jsonAt(t, do(t, tp, "GET", slices+"db-ipv4", "", "").body, "endpoints"); got != `[{"addresses":["192.0.2.1"],"conditions":{"ready":true,"serving":true,"terminating":false}},{"addresses":["192.0.2.2"],"conditions":{"ready":false,"serving":false,"terminating":false}}]` {
		t.Errorf("db-ipv4 endpoints: %s", got)
	}
	if got := jsonAt(t, do(t, tp, "GET", slices+"db-ipv6", "", "").body, "endpoints.0.addresses"); got != `["2001:db8::1"]` {
		t.Errorf("db-ipv6: %s", got)
	}
	runSteps(t, tp, []step{
		{name: "deleting a mirrored slice", method: "DELETE", path: slices + "db-ipv6", code: 200},
		{name: "it is put back", method: "GET", path: slices + "db-ipv6", code: 200},
		{name: "the Endpoints lose their IPv6 address", method: "PUT", path: base + "endpoints/db", body: `{"metadata":{"name":"db"},"subsets":[{"addresses":[{"ip":"192.0.2.1"}],"ports":[{"port":5432}]}]}`, code: 200},
		{name: "so does the mirror", method: "GET", path: slices + "db-ipv6", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "delete the service", method: "DELETE", path: base + "services/web", code: 200},
		{name: "its slices went with its Endpoints", method: "GET", path: slices + "web-ipv4", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "the client's slice stays", method: "GET", path: slices + "own", code: 200},
	})
	// Without the option there are none, and seeding one is refused.
	plain := faketp.StartT(t, faketp.Options{}).TPs()[0]
	if err := plain.Seed(map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": map[string]any{"name": "s"}, "addressType": "IPv4"}); err == nil {
		t.Fatal("seeded an EndpointSlice into a TP that serves none")
	}
}

// Generate makes Endpoints (through the endpoints controller, or itself
// without one) and the tenants and namespaces its objects live in.
func TestGenerateMakesEndpoints(t *testing.T) {
	var ips []string
	for _, ctrl := range [][]string{nil, {}} {
		tp := faketp.StartT(t, faketp.Options{Controllers: ctrl}).TPs()[0]
		if err := tp.Generate(faketp.GenerateOptions{Tenant: "gen", Namespaces: 2, Pods: 12, Services: 3}); err != nil {
			t.Fatal(err)
		}
		r := do(t, tp, "GET", "/api/v1/tenants/gen/namespaces/gen-1/endpoints/svc-1", "", "")
		if r.code != 200 {
			t.Fatalf("controllers %v: Endpoints svc-1: %d", ctrl, r.code)
		}
		ips = append(ips, jsonAt(t, r.body, "subsets.0.addresses.0.ip")+" "+jsonAt(t, r.body, "subsets.0.addresses.1.ip")+" "+jsonAt(t, r.body, "subsets.0.addresses.2.ip"))
		if r := do(t, tp, "GET", "/api/v1/tenants/gen", "", ""); r.code != 200 || jsonAt(t, r.body, "spec.storageClusterId") != "0" {
			t.Fatalf("generated tenant: %d %s", r.code, r.body)
		}
	}
	// Pods 1, 7 (svc-1, in gen-1) and none else: 1%3 == 7%3 == 1, both odd.
	if ips[0] != "10.244.0.3 10.244.0.9 <none>" || ips[1] != ips[0] {
		t.Fatalf("svc-1's addresses with and without the controller: %q", ips)
	}
}

// The seed format takes Tenants with their storageClusterId and Endpoints.
func TestSeedManifestTenantsAndEndpoints(t *testing.T) {
	tp := faketp.StartT(t, faketp.Options{}).TPs()[0]
	f := filepath.Join(t.TempDir(), "seed.yaml")
	manifest := `apiVersion: v1
kind: Tenant
metadata: {name: acme}
spec: {storageClusterId: "7"}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: web, tenant: acme}
spec:
  ports: [{port: 5432}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: db, namespace: web, tenant: acme}
subsets:
- addresses: [{ip: 192.0.2.1}]
  ports: [{port: 5432}]
`
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tp.SeedFiles(f); err != nil {
		t.Fatal(err)
	}
	tenant := do(t, tp, "GET", "/api/v1/tenants/acme", "", "").body
	if jsonAt(t, tenant, "spec.storageClusterId") != "7" || jsonAt(t, tenant, "spec.finalizers") != `["arktos"]` {
		t.Errorf("seeded tenant: %s", tenant)
	}
	ep := do(t, tp, "GET", "/api/v1/tenants/acme/namespaces/web/endpoints/db", "", "").body
	if jsonAt(t, ep, "subsets.0.addresses.0.ip") != "192.0.2.1" || jsonAt(t, ep, "subsets.0.ports.0.protocol") != "TCP" {
		t.Errorf("seeded Endpoints: %s", ep)
	}
	// A tenant without a storage cluster is seeded in cluster 0; one out
	// of range is refused.
	if err := tp.Seed(map[string]any{"apiVersion": "v1", "kind": "Tenant", "metadata": map[string]any{"name": "beta"}}); err != nil {
		t.Fatal(err)
	}
	if err := tp.Seed(map[string]any{"apiVersion": "v1", "kind": "Tenant", "metadata": map[string]any{"name": "gamma"}, "spec": map[string]any{"storageClusterId": "64"}}); err == nil {
		t.Error("seeded a tenant in storage cluster 64")
	}
}

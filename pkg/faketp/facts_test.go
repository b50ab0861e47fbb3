package faketp_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/faketp"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
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

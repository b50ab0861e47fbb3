package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestIsNodes(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/v1/nodes":                            true,
		"/api/v1/nodes/tpkit-node1":                true,
		"/api/v1/nodes/tpkit-node1/status":         true,
		"/api/v1/watch/nodes":                      true,
		"/api/v1/nodesfoo":                         false,
		"/api/v1/namespaces/default/pods":          false,
		"/api/v1/tenants/all/pods":                 false,
		"/apis/coordination.k8s.io/v1/leases":      false,
		"/api/v1/namespaces/kube-system/endpoints": false,
		"/api": false,
	} {
		if got := isNodes(path); got != want {
			t.Errorf("isNodes(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestRoutes runs the handler in front of three real HTTP servers: Node
// requests reach the resource partition's, the list of the cluster DNS pods
// the DNS TP's, the rest the tested TP's.
func TestRoutes(t *testing.T) {
	serve := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, name+" "+r.URL.Path)
		}))
	}
	tp, rp, dnsTP := serve("tp"), serve("rp"), serve("dns")
	defer tp.Close()
	defer rp.Close()
	defer dnsTP.Close()
	h, err := newHandler(tp.URL, rp.URL, dnsTP.URL)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(h)
	defer front.Close()
	for path, want := range map[string]string{
		"/api/v1/nodes":                   "rp /api/v1/nodes",
		"/api/v1/nodes/n1":                "rp /api/v1/nodes/n1",
		"/api/v1/namespaces/default/pods": "tp /api/v1/namespaces/default/pods",
		"/version":                        "tp /version",
		"/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dkube-dns":                "dns /api/v1/namespaces/kube-system/pods",
		"/api/v1/tenants/system/namespaces/kube-system/pods?labelSelector=k8s-app%3Dkube-dns": "dns /api/v1/tenants/system/namespaces/kube-system/pods",
		"/api/v1/tenants/acme/namespaces/kube-system/pods?labelSelector=k8s-app%3Dkube-dns":   "tp /api/v1/tenants/acme/namespaces/kube-system/pods",
		"/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dother":                   "tp /api/v1/namespaces/kube-system/pods",
		"/api/v1/namespaces/default/pods?labelSelector=k8s-app%3Dkube-dns":                    "tp /api/v1/namespaces/default/pods",
		"/api/v1/namespaces/kube-system/configmaps/kube-dns":                                  "tp /api/v1/namespaces/kube-system/configmaps/kube-dns",
	} {
		resp, err := http.Get(front.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("GET %s: %q, want %q", path, b, want)
		}
	}
}

func TestBadURLs(t *testing.T) {
	for _, c := range []struct{ tp, rp string }{{"", "http://a:1"}, {"http://a:1", ""}, {"ftp://a", "http://a:1"}, {"http://a:1", "nohost"}} {
		if _, err := newHandler(c.tp, c.rp, "http://a:1"); err == nil {
			t.Errorf("newHandler(%q, %q): no error", c.tp, c.rp)
		}
	}
}

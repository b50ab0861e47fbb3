package faketp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

var pathSeeds = []string{
	"/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1", "/apis/discovery.k8s.io/v1",
	"/api/v1/pods", "/api/v1/namespaces", "/api/v1/namespaces/default", "/api/v1/namespaces/default/status",
	"/api/v1/namespaces/default/pods", "/api/v1/namespaces/default/pods/p", "/api/v1/namespaces/default/pods/p/status",
	"/api/v1/tenants", "/api/v1/tenants/acme", "/api/v1/tenants/acme/pods", "/api/v1/tenants/acme/namespaces",
	"/api/v1/tenants/acme/namespaces/ns", "/api/v1/tenants/acme/namespaces/ns/configmaps/c",
	"/apis/apps/v1/tenants/acme/namespaces/ns/daemonsets/d/status", "/api/v1/watch/namespaces/default/pods/p",
	"/apis/apps/v1/tenants", "/api/v1/pods/p", "//api", "/api/v1/namespaces/../pods", "/api/v1/tenants/ALL/pods",
	"/api/v1/namespaces/a/pods/b/c/d", "/apis/apps/v1/watch", "/api/v1/tenants/a/namespaces/b/status/x",
	"/api/v1/tenants/all/pods", "/api/v1/tenants/all/namespaces/ns/pods", "/api/v1/tenants/all/namespaces",
	"/api/v1/namespaces/default/pods/p/binding", "/api/v1/tenants/acme/status", "/openapi/v2",
}

// FuzzParsePath: no path panics the router, and every answer is either a
// target or an API status of 400 or 404.
func FuzzParsePath(f *testing.F) {
	for _, p := range pathSeeds {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tgt, err := parsePath(p)
		if err != nil {
			code := apierrors.ReasonForError(err)
			if s := statusOf(err); s.Code != 400 && s.Code != 404 {
				t.Fatalf("%q: status %d %s", p, s.Code, code)
			}
			return
		}
		if (tgt.kind == targetCollection || tgt.kind == targetObject) && tgt.res == nil {
			t.Fatalf("%q: resource target without a resource", p)
		}
		if tgt.kind == targetObject && tgt.name == "" {
			t.Fatalf("%q: object target without a name", p)
		}
	})
}

// FuzzServe sends arbitrary requests to a TP: nothing panics and nothing
// gets a 5xx.
func FuzzServe(f *testing.F) {
	tp, err := NewTP(TPOptions{Name: "fuzz", KubeconfigDir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	if err := tp.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = tp.close() })
	bodies := []string{"", "{}", "[]", "null", `{"metadata":{"name":"x"}}`, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[{"name":"c"}]}}`,
		`[{"op":"add","path":"/metadata/labels","value":{}}]`, `{"metadata":{"name":"x","tenant":7}}`, `{"spec":{"containers":"x"}}`}
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
	cts := []string{"application/json", "application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json", "application/yaml", "application/vnd.kubernetes.protobuf", ""}
	for i, p := range pathSeeds {
		f.Add(uint8(i), p, "", bodies[i%len(bodies)], uint8(i))
	}
	f.Add(uint8(1), "/api/v1/namespaces/default/pods", "", bodies[5], uint8(0))
	f.Add(uint8(3), "/api/v1/namespaces/default/pods/p", "", `{"spec":{"containers":[{"name":"c","image":"x"}]}}`, uint8(3))
	f.Add(uint8(0), "/api/v1/pods", "watch=1&timeoutSeconds=0&labelSelector=a&fieldSelector=spec.nodeName%3Dx", "", uint8(0))
	f.Add(uint8(0), "/api/v1/pods", "limit=1&continue=eyJydiI6MX0", "", uint8(0))
	f.Add(uint8(0), "/api/v1/pods", "watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1", "", uint8(0))
	f.Fuzz(func(t *testing.T, m uint8, path, query, body string, ct uint8) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req := httptest.NewRequest(methods[int(m)%len(methods)], "http://fuzz/", strings.NewReader(body))
		req.URL.Path = path
		req.URL.RawQuery = query
		if c := cts[int(ct)%len(cts)]; c != "" {
			req.Header.Set("Content-Type", c)
		}
		if ct%2 == 1 {
			req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
		}
		q := req.URL.Query()
		if q.Get("watch") != "" {
			// Keep watches short: fuzzing must not block on a stream.
			q.Set("timeoutSeconds", "1")
			req.URL.RawQuery = q.Encode()
		}
		// A cancelled context: a watch (by parameter or by /watch/ path)
		// ends at once; other requests do not look at it.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req = req.WithContext(ctx)
		rec := httptest.NewRecorder()
		tp.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s?%s (%s): %d %s", req.Method, path, query, req.Header.Get("Content-Type"), rec.Code, rec.Body.String())
		}
		if rec.Code >= 400 && !strings.Contains(rec.Body.String(), `"kind":"Status"`) && req.Method != http.MethodHead {
			t.Fatalf("%s %s: error %d without a Status: %s", req.Method, path, rec.Code, rec.Body.String())
		}
	})
}

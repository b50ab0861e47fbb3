package k8s

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	corev1 "k8s.io/api/core/v1"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

func TestLiftTenant(t *testing.T) {
	cases := []struct {
		name, in string
		// tenants are the tenants expected on the decoded objects, in order.
		tenants []string
	}{
		{"object", `{"kind":"Pod","metadata":{"name":"a","tenant":"t1"}}`, []string{"t1"}},
		{"object keeps annotations", `{"kind":"Pod","metadata":{"name":"a","tenant":"t2","annotations":{"x":"y"}}}`, []string{"t2"}},
		{"object without tenant", `{"kind":"Pod","metadata":{"name":"a"}}`, []string{tenancy.SystemTenant}},
		{"list", `{"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a","tenant":"t1"}},{"metadata":{"name":"b"}},{"metadata":{"name":"c","tenant":"system"}}]}`, []string{"t1", tenancy.SystemTenant, tenancy.SystemTenant}},
		{"watch event", `{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","tenant":"t3"}}}`, []string{"t3"}},
		{"tenant only in a label value", `{"kind":"Pod","metadata":{"name":"a","labels":{"tenant":"x"}}}`, []string{tenancy.SystemTenant}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := LiftTenant([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			var probe struct {
				Items  []corev1.Pod `json:"items"`
				Object *corev1.Pod  `json:"object"`
			}
			if err := json.Unmarshal(out, &probe); err != nil {
				t.Fatal(err)
			}
			switch {
			case probe.Items != nil:
				for i := range probe.Items {
					got = append(got, tenancy.TenantOf(&probe.Items[i]))
				}
			case probe.Object != nil:
				got = append(got, tenancy.TenantOf(probe.Object))
			default:
				var pod corev1.Pod
				if err := json.Unmarshal(out, &pod); err != nil {
					t.Fatal(err)
				}
				got = append(got, tenancy.TenantOf(&pod))
				if strings.Contains(tc.in, `"x":"y"`) && pod.Annotations["x"] != "y" {
					t.Errorf("existing annotation lost: %v", pod.Annotations)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.tenants, ",") {
				t.Errorf("tenants = %v, want %v (output %s)", got, tc.tenants, out)
			}
			if strings.Contains(string(out), `"tenant":"`) && !strings.Contains(tc.in, `"labels":{"tenant"`) {
				t.Errorf("metadata.tenant left in output: %s", out)
			}
		})
	}
}

func TestLiftTenantRejectsNonStringTenant(t *testing.T) {
	if _, err := LiftTenant([]byte(`{"metadata":{"tenant":5}}`)); err == nil {
		t.Fatal("want an error for a numeric metadata.tenant")
	}
}

func TestLowerTenantRoundTrip(t *testing.T) {
	in := `{"kind":"ConfigMap","metadata":{"name":"a","tenant":"t1","annotations":{"keep":"me"}}}`
	lifted, err := LiftTenant([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	lowered := LowerTenant(lifted)
	var obj struct {
		Metadata struct {
			Tenant      string            `json:"tenant"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(lowered, &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Metadata.Tenant != "t1" || obj.Metadata.Annotations["keep"] != "me" || obj.Metadata.Annotations[tenancy.TenantAnnotation] != "" {
		t.Fatalf("LowerTenant(LiftTenant(x)) = %s", lowered)
	}
}

func TestTenantPath(t *testing.T) {
	cases := []struct{ in, want string }{
		{"/api/v1/namespaces/ns/pods", "/api/v1/tenants/t1/namespaces/ns/pods"},
		{"/api/v1/namespaces/ns/configmaps/cm", "/api/v1/tenants/t1/namespaces/ns/configmaps/cm"},
		{"/api/v1/namespaces/ns", "/api/v1/tenants/t1/namespaces/ns"},
		{"/api/v1/pods", "/api/v1/tenants/t1/pods"},
		{"/apis/apps/v1/namespaces/ns/daemonsets", "/apis/apps/v1/tenants/t1/namespaces/ns/daemonsets"},
		{"/apis/discovery.k8s.io/v1/endpointslices", "/apis/discovery.k8s.io/v1/tenants/t1/endpointslices"},
		{"/api/v1/tenants/t2/namespaces/ns/pods", "/api/v1/tenants/t2/namespaces/ns/pods"},
		{"/api/v1/nodes/n1", "/api/v1/nodes/n1"},
		{"/api/v1/tenants/t1", "/api/v1/tenants/t1"},
		{"/api/v1", "/api/v1"},
		{"/apis/apps/v1", "/apis/apps/v1"},
		{"/version", "/version"},
	}
	for _, tc := range cases {
		if got := TenantPath(tc.in, "t1"); got != tc.want {
			t.Errorf("TenantPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzLiftTenant(f *testing.F) {
	for _, s := range []string{`{"metadata":{"tenant":"t1"}}`, `{"items":[{"metadata":{"tenant":"a"}}]}`, `{"type":"ADDED","object":{"metadata":{"tenant":"x"}}}`, `[1,2]`, `"tenant"`, `{"metadata":{"tenant":null}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := LiftTenant([]byte(s))
		if err != nil {
			return
		}
		if json.Valid([]byte(s)) && !json.Valid(out) {
			t.Fatalf("LiftTenant(%q) produced invalid JSON %q", s, out)
		}
	})
}

func BenchmarkLiftTenantPodList(b *testing.B) {
	var items []string
	for i := 0; i < 100; i++ {
		items = append(items, `{"metadata":{"name":"p","namespace":"ns","tenant":"t1","uid":"u","labels":{"a":"b"}},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"i"}]},"status":{"podIP":"10.0.0.1"}}`)
	}
	list := []byte(`{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[` + strings.Join(items, ",") + `]}`)
	b.SetBytes(int64(len(list)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LiftTenant(list); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzLiftFastMatchesSlow(f *testing.F) {
	for _, s := range []string{
		`{"metadata":{"tenant":"t1"}}`,
		`{"metadata":{"name":"a","tenant":"t1","annotations":{"x":"y"}}}`,
		`{"metadata":{"tenant":"t1","annotations":{}}}`,
		`{"metadata":{"annotations":{"x":"y"} , "tenant" : "t1" ,"name":"n"}}`,
		`{"metadata":{"tenant":"t1","name":"a"},"items":[{"metadata":{"tenant":"a","labels":{"tenant":"x"}}},{"spec":{}}]}`,
		`{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","tenant":"t3"}}}`,
		`{"metadata":{"tenant":"","annotations":null}}`,
		`{"metadata":{"tenant":"a\"b"}}`,
		`{"items":[1,{"metadata":{"tenant":"q"}}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, ok := liftFast([]byte(s))
		if !ok {
			return
		}
		slow, err := liftSlow([]byte(s))
		if err != nil {
			if json.Valid([]byte(s)) {
				t.Fatalf("fast path accepted %q that the slow path rejects: %v", s, err)
			}
			return
		}
		var a, b any
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("fast output of %q is not JSON: %q (%v)", s, fast, err)
		}
		if err := json.Unmarshal(slow, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("fast and slow differ for %q:\nfast %s\nslow %s", s, fast, slow)
		}
	})
}

// A watch stream cut mid-event must surface as io.ErrUnexpectedEOF itself:
// client-go's StreamWatcher compares by identity and re-watches on it, but
// turns any other error into an Error event that forces a full relist.
func TestLiftingBodyKeepsReaderErrorIdentity(t *testing.T) {
	cases := []struct {
		name, stream string
		want         error
	}{
		{"clean end", `{"type":"ADDED","object":{"metadata":{"name":"a"}}}` + "\n", io.EOF},
		{"cut mid-event", `{"type":"ADDED","object":{"metadata":{"na`, io.ErrUnexpectedEOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := newLiftingBody(io.NopCloser(strings.NewReader(tc.stream)))
			_, err := io.ReadAll(body)
			if tc.want == io.EOF {
				if err != nil {
					t.Fatalf("ReadAll error = %v, want none", err)
				}
				return
			}
			if err != tc.want {
				t.Fatalf("error = %#v, want exactly %v", err, tc.want)
			}
		})
	}
	body := newLiftingBody(io.NopCloser(strings.NewReader(`{"type":}`)))
	_, err := io.ReadAll(body)
	if err == nil || !strings.Contains(err.Error(), "tenancy transport") {
		t.Fatalf("malformed JSON error = %v, want one naming the tenancy transport", err)
	}
}

// A response that is not a watch is lifted in one piece, whatever its
// announced size, and the source's read errors come through as they are.
func TestWholeBodyLiftsOneValue(t *testing.T) {
	list := `{"kind":"PodList","items":[{"metadata":{"name":"a","tenant":"t1"}},{"metadata":{"name":"b"}}]}`
	for _, size := range []int64{-1, 0, int64(len(list)), int64(len(list)) - 7, int64(len(list)) * 3} {
		b := &wholeBody{src: io.NopCloser(strings.NewReader(list)), size: size}
		out, err := io.ReadAll(b)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		var got corev1.PodList
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if len(got.Items) != 2 || got.Items[0].Annotations[tenancy.TenantAnnotation] != "t1" || got.Items[1].Annotations[tenancy.TenantAnnotation] != "" {
			t.Fatalf("size %d: lifted %s", size, out)
		}
	}
	cut := &wholeBody{src: io.NopCloser(io.MultiReader(strings.NewReader(list[:20]), iotest.ErrReader(io.ErrUnexpectedEOF))), size: -1}
	if _, err := io.ReadAll(cut); err != io.ErrUnexpectedEOF {
		t.Fatalf("a cut body reads as %v, want io.ErrUnexpectedEOF itself", err)
	}
}

func TestIsWatch(t *testing.T) {
	for raw, want := range map[string]bool{
		"/api/v1/tenants/all/pods?watch=true&resourceVersion=5": true,
		"/api/v1/tenants/all/pods?watch=1":                      true,
		"/api/v1/watch/pods":                                    true,
		"/api/v1/tenants/all/pods?limit=500":                    false,
		"/api/v1/tenants/all/pods?watch=false":                  false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := isWatch(u); got != want {
			t.Errorf("isWatch(%s) = %v, want %v", raw, got, want)
		}
	}
}

// WithRawResponse leaves a response as the server sent it; without it the
// tenant is lifted.
func TestRawResponse(t *testing.T) {
	const body = `{"kind":"Pod","metadata":{"name":"a","tenant":"t1"}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	get := func(ctx context.Context) string {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/namespaces/x/pods/a", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&Transport{}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if got := get(WithRawResponse(context.Background())); got != body {
		t.Fatalf("raw response = %s, want it as sent", got)
	}
	if got := get(context.Background()); got == body || !strings.Contains(got, tenancy.TenantAnnotation) {
		t.Fatalf("lifted response = %s", got)
	}
}

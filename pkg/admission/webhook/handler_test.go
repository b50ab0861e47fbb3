package webhook

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/admission/daemonset"
	"github.com/tpkit-dev/tpkit/pkg/admission/tenantname"
)

func newTLSServer(t testing.TB, plugin admission.ValidationInterface) (*httptest.Server, *Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(NewHandler(plugin, m, klog.Background()))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, m
}

func post(t *testing.T, srv *httptest.Server, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/validate", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func defaultChain() admission.Chain {
	return admission.Chain{daemonset.New(daemonset.Config{}), tenantname.New()}
}

func tenantJSON(name string) string {
	return `{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"` + name + `"}}`
}

func TestHandlerOverHTTPS(t *testing.T) {
	srv, m := newTLSServer(t, defaultChain())
	cases := []struct {
		name        string
		body        string
		wantAllowed bool
		wantCode    int32
		wantMessage string
	}{
		{"daemonset in system", review("a1", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("system"), ""), true, 0, ""},
		{"daemonset without tenant", review("a2", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON(""), ""), true, 0, ""},
		{"daemonset in t1", review("d1", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("t1"), ""), false, 403, `daemonsets.apps "ds1" is forbidden: ` + daemonset.Message},
		{"daemonset update in t1", review("d2", "UPDATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("t1"), dsJSON("t1")), false, 403, daemonset.Message},
		{"daemonset delete in t1", review("a3", "DELETE", "apps", "daemonsets", "DaemonSet", "ds1", "", dsJSON("t1")), true, 0, ""},
		{"pod in t1 is not our business", review("a4", "CREATE", "", "pods", "Pod", "p", `{"metadata":{"name":"p","tenant":"t1"}}`, ""), true, 0, ""},
		{"tenant t1", review("a5", "CREATE", "", "tenants", "Tenant", "t1", tenantJSON("t1"), ""), true, 0, ""},
		{"tenant all", review("d3", "CREATE", "", "tenants", "Tenant", "all", tenantJSON("all"), ""), false, 422, `"all" is reserved`},
		{"tenant Bad_Name", review("d4", "CREATE", "", "tenants", "Tenant", "Bad_Name", tenantJSON("Bad_Name"), ""), false, 422, `Tenant "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": tenant name "Bad_Name" is not a DNS-1123 label`},
		{"delete system tenant", review("d5", "DELETE", "", "tenants", "Tenant", "system", "", tenantJSON("system")), false, 403, "cannot be deleted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, srv, "application/json", tc.body)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatalf("response %s: %v", body, err)
			}
			in, _ := DecodeReview([]byte(tc.body))
			if out.APIVersion != APIVersion || out.Kind != Kind || out.Response == nil || out.Response.UID != in.Request.UID {
				t.Fatalf("response %s does not answer request %s", body, in.Request.UID)
			}
			if out.Response.Allowed != tc.wantAllowed {
				t.Fatalf("allowed = %v, want %v: %s", out.Response.Allowed, tc.wantAllowed, body)
			}
			if tc.wantAllowed {
				if out.Response.Result != nil {
					t.Errorf("allowed response carries a status: %s", body)
				}
				return
			}
			if out.Response.Result == nil || out.Response.Result.Code != tc.wantCode || !strings.Contains(out.Response.Result.Message, tc.wantMessage) {
				t.Fatalf("result %+v, want code %d and message containing %q", out.Response.Result, tc.wantCode, tc.wantMessage)
			}
		})
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("CREATE", "daemonsets", "denied")); got != 1 {
		t.Errorf("denied CREATE daemonsets counted %v times, want 1", got)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("CREATE", "other", "allowed")); got != 1 {
		t.Errorf("allowed CREATE other counted %v times, want 1", got)
	}
}

func TestHandlerMalformed(t *testing.T) {
	srv, m := newTLSServer(t, defaultChain())
	good := review("u1", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("t1"), "")
	cases := []struct {
		name, contentType, body string
		wantCode                int
		wantMessage             string
	}{
		{"empty", "application/json", "", 400, "empty body"},
		{"not json", "application/json", "hello", 400, "not a JSON object"},
		{"truncated", "application/json", good[:40], 400, "decoding AdmissionReview"},
		{"v1beta1", "application/json", strings.Replace(good, "admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1), 400, "admissionReviewVersions"},
		{"no request", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400, "no request"},
		{"bad object", "application/json", review("u", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", `[]`, ""), 400, "request.object is not a JSON object"},
		{"bad tenant", "application/json", review("u", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", `{"metadata":{"tenant":["t1"]}}`, ""), 400, "metadata.tenant is not a string"},
		{"wrong content type", "text/plain", good, 400, "want application/json"},
		{"json with charset is fine", "application/json; charset=utf-8", good, 200, daemonset.Message},
		{"too large", "application/json", `{"apiVersion":"` + strings.Repeat("x", MaxBodyBytes) + `"}`, 413, "larger than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, srv, tc.contentType, tc.body)
			if code != tc.wantCode || !bytes.Contains(body, []byte(tc.wantMessage)) {
				t.Fatalf("got %d %q, want %d with %q", code, body, tc.wantCode, tc.wantMessage)
			}
		})
	}
	resp, err := srv.Client().Get(srv.URL + "/validate")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("", "", "bad_request")); got != 10 {
		t.Errorf("bad requests counted %v, want 10", got)
	}
}

type panicky struct{}

func (panicky) Handles(admission.Operation) bool { return true }
func (panicky) Validate(context.Context, admission.Request) error {
	panic("plugin bug")
}

func TestHandlerSurvivesPluginPanic(t *testing.T) {
	srv, _ := newTLSServer(t, panicky{})
	code, body := post(t, srv, "application/json", review("p1", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("system"), ""))
	var out admissionv1.AdmissionReview
	if code != 200 || json.Unmarshal(body, &out) != nil || out.Response == nil || out.Response.Allowed || out.Response.Result.Code != 500 {
		t.Fatalf("got %d %s, want a 500 denial", code, body)
	}
	// The server still answers.
	if code, _ := post(t, srv, "application/json", "{}"); code != 400 {
		t.Fatalf("after panic: %d", code)
	}
}

func TestNewMetricsTwiceOnOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Fatal("registering twice succeeded; want an error, not a silent clash")
	}
}

func BenchmarkHandler(b *testing.B) {
	h := NewHandler(defaultChain(), nil, klog.Background())
	bodies := [][]byte{
		[]byte(review("a", "UPDATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("system"), dsJSON("system"))),
		[]byte(review("d", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("t1"), "")),
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(bodies[i%2]))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
		i++
	}
}

// TestHandlerSlowBody: a client that sends headers and then trickles (here:
// stops sending) the body is cut off by the read deadline instead of holding
// the connection forever.
func TestHandlerSlowBody(t *testing.T) {
	h := NewHandler(defaultChain(), nil, klog.Background())
	h.ReadTimeout = 100 * time.Millisecond
	srv := httptest.NewUnstartedServer(h)
	srv.StartTLS() // HTTP/1.1, so the test can write a partial request by hand
	defer srv.Close()
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), srv.Client().Transport.(*http.Transport).TLSClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A failsafe only: the server must end the exchange long before this.
	conn.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(conn, "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"apiVersion\":")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("server closed without a response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "reading body") {
		t.Fatalf("got %d %q, want 400 reading body", resp.StatusCode, b)
	}
}

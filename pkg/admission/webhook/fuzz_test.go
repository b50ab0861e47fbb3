package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"
)

// FuzzReview drives arbitrary bodies through the whole handler: decoding,
// the record, both plugins and the response. It must never panic, must
// answer 200 or 400/413, and a 200 must answer the request's uid.
func FuzzReview(f *testing.F) {
	f.Add([]byte(review("u1", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("t1"), "")))
	f.Add([]byte(review("u2", "UPDATE", "apps", "daemonsets", "DaemonSet", "ds1", dsJSON("system"), dsJSON("system"))))
	f.Add([]byte(review("u3", "DELETE", "apps", "daemonsets", "DaemonSet", "ds1", "", `{"metadata":{"tenant":"t1","deletionTimestamp":"2020-01-01T00:00:00Z"}}`)))
	f.Add([]byte(review("u4", "CREATE", "", "tenants", "Tenant", "", tenantJSON("Bad_Name"), "")))
	f.Add([]byte(review("u5", "DELETE", "", "tenants", "Tenant", "", "", tenantJSON("system"))))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"CREATE","object":{"metadata":null}}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"UPDATE","resource":{"group":"apps","resource":"daemonsets"},"oldObject":{"metadata":{"deletionTimestamp":7}}}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(``))
	h := NewHandler(defaultChain(), nil, klog.Background())
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK:
			in, err := DecodeReview(body)
			if err != nil {
				t.Fatalf("200 for a body DecodeReview rejects: %v", err)
			}
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Response == nil || out.Response.UID != in.Request.UID {
				t.Fatalf("bad response %s (%v)", w.Body.Bytes(), err)
			}
			if !out.Response.Allowed && (out.Response.Result == nil || out.Response.Result.Message == "") {
				t.Fatalf("denial without a message: %s", w.Body.Bytes())
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			if w.Body.Len() == 0 {
				t.Fatal("error without a message")
			}
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body.Bytes())
		}
	})
}

package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	admissionk8s "github.com/tpkit-dev/tpkit/pkg/admission/k8s"
)

// MaxBodyBytes bounds a review body. The API server caps request bodies at
// 3 MiB, and a review can carry an object and its old version.
const MaxBodyBytes = 7 << 20

// BodyReadTimeout bounds reading a review body, so a client that trickles
// bytes cannot hold a connection and its goroutine: the API server sends the
// whole review at once and gives up after at most 30 s anyway.
const BodyReadTimeout = 10 * time.Second

// Metrics are the webhook's Prometheus metrics. Build them with NewMetrics.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics creates the webhook metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tpkit", Subsystem: "admission_webhook", Name: "requests_total",
			Help: "Admission reviews handled, by operation, resource and decision (allowed, denied, bad_request).",
		}, []string{"operation", "resource", "decision"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "tpkit", Subsystem: "admission_webhook", Name: "request_duration_seconds",
			Help:    "Time from reading a review to writing its response, by decision.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 14), // 50µs .. ~0.4s
		}, []string{"decision"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering webhook metrics: %w", err)
		}
	}
	return m, nil
}

// Handler serves AdmissionReview POSTs by running a plugin (usually an
// admission.Chain). It is safe for concurrent use.
type Handler struct {
	// ReadTimeout bounds reading one review body; BodyReadTimeout when zero.
	// Set it before serving.
	ReadTimeout time.Duration

	plugin  admission.ValidationInterface
	metrics *Metrics
	logger  klog.Logger
}

// NewHandler returns a Handler running plugin. metrics may be nil.
func NewHandler(plugin admission.ValidationInterface, metrics *Metrics, logger klog.Logger) *Handler {
	return &Handler{plugin: plugin, metrics: metrics, logger: logger}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.fail(w, start, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: POST an admission.k8s.io/v1 AdmissionReview", r.Method))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			h.fail(w, start, http.StatusBadRequest, fmt.Sprintf("content type %q not supported: want application/json", ct))
			return
		}
	}
	// Not every ResponseWriter supports deadlines (httptest's does not);
	// the real servers do, on HTTP/1.1 and HTTP/2.
	readTimeout := h.ReadTimeout
	if readTimeout <= 0 {
		readTimeout = BodyReadTimeout
	}
	_ = http.NewResponseController(w).SetReadDeadline(start.Add(readTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.fail(w, start, http.StatusRequestEntityTooLarge, fmt.Sprintf("AdmissionReview larger than %d bytes", MaxBodyBytes))
			return
		}
		h.fail(w, start, http.StatusBadRequest, fmt.Sprintf("reading body: %v", err))
		return
	}
	review, err := DecodeReview(body)
	if err != nil {
		h.fail(w, start, http.StatusBadRequest, err.Error())
		return
	}
	rec, err := RecordFromRequest(review.Request)
	if err != nil {
		h.fail(w, start, http.StatusBadRequest, fmt.Sprintf("AdmissionReview request %s: %v", review.Request.UID, err))
		return
	}
	var out *admissionv1.AdmissionReview
	decision := "allowed"
	if err := h.validate(r, string(review.Request.UID), rec); err != nil {
		decision = "denied"
		out = Denied(review, err)
		h.logger.V(1).Info("Denied", "uid", review.Request.UID, "operation", rec.Operation, "resource", resourceName(rec),
			"tenant", rec.Tenant, "namespace", rec.Namespace, "name", rec.Name, "user", rec.User.GetName(), "reason", err.Error())
	} else {
		out = Allowed(review)
		h.logger.V(4).Info("Allowed", "uid", review.Request.UID, "operation", rec.Operation, "resource", resourceName(rec),
			"tenant", rec.Tenant, "namespace", rec.Namespace, "name", rec.Name, "user", rec.User.GetName())
	}
	resp, err := json.Marshal(out)
	if err != nil { // cannot happen for these types; never panic on it
		h.fail(w, start, http.StatusInternalServerError, fmt.Sprintf("encoding response: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resp)
	h.observe(start, string(rec.Operation), resourceLabel(rec.Resource.Resource), decision)
}

// validate runs the plugin, turning a plugin panic into a denial: a webhook
// with failurePolicy Fail must answer, and a crash would take every request
// down with it.
func (h *Handler) validate(r *http.Request, uid string, rec *admissionk8s.Record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			h.logger.Error(nil, "Admission plugin panicked", "panic", p, "uid", uid, "resource", resourceName(rec))
			err = fmt.Errorf("admission plugin failed: %v", p)
		}
	}()
	return admissionk8s.Validate(r.Context(), h.plugin, rec)
}

func (h *Handler) fail(w http.ResponseWriter, start time.Time, code int, msg string) {
	h.logger.V(1).Info("Rejected malformed review", "status", code, "reason", msg)
	http.Error(w, msg, code)
	h.observe(start, "", "", "bad_request")
}

func (h *Handler) observe(start time.Time, op, resource, decision string) {
	if h.metrics == nil {
		return
	}
	h.metrics.requests.WithLabelValues(op, resource, decision).Inc()
	h.metrics.latency.WithLabelValues(decision).Observe(time.Since(start).Seconds())
}

// resourceLabel keeps the metric's label set fixed whatever the API server
// (or an attacker) sends.
func resourceLabel(r string) string {
	switch r {
	case "daemonsets", "tenants":
		return r
	}
	return "other"
}

// resourceName renders "daemonsets.apps" or "tenants" for logs.
func resourceName(rec *admissionk8s.Record) string {
	if rec.Resource.Group == "" {
		return rec.Resource.Resource
	}
	return rec.Resource.Resource + "." + rec.Resource.Group
}

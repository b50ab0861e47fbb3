package faketp

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// maxBodyBytes caps request bodies, as kube-apiserver's 3 MiB limit does.
const maxBodyBytes = 3 << 20

// serverVersion is what /version reports, Arktos's (sample 00): 1.0, which
// kubectl 1.32 warns is beyond its version skew, as it does against Arktos.
var serverVersion = version.Info{
	Major: "1", Minor: "0", GitVersion: "v1.0.0-arktos+faketp", GitCommit: "faketp", GitTreeState: "clean",
	BuildDate: "2026-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
}

// metrics are one TP's request metrics.
type metrics struct {
	mu     sync.Mutex
	counts map[[2]string]int
	codes  map[[3]string]int

	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	watches  prometheus.Gauge
}

func newMetrics(tp string) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faketp_requests_total", Help: "API requests served, by verb, resource and HTTP code.",
			ConstLabels: prometheus.Labels{"tp": tp},
		}, []string{"verb", "resource", "code"}),
		watches: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "faketp_watches", Help: "Open watch streams.", ConstLabels: prometheus.Labels{"tp": tp},
		}),
	}
	m.reg.MustRegister(m.requests, m.watches)
	return m
}

func (m *metrics) count(verb, res string, code int) {
	m.requests.WithLabelValues(verb, res, strconv.Itoa(code)).Inc()
	m.mu.Lock()
	if m.codes == nil {
		m.codes = map[[3]string]int{}
	}
	m.codes[[3]string{verb, res, strconv.Itoa(code)}]++
	m.mu.Unlock()
}

// ExpiredWatches returns how many watches the TP answered with 410 Gone:
// an HTTP 410 for a version it no longer holds, or an ERROR event (reason
// Expired) ending a stream whose events were compacted or overflowed the
// history before the client read them.
func (tp *TP) ExpiredWatches() int { return int(tp.expiredWatches.Load()) }

// ResponseCount returns how many requests of verb on resource (see
// RequestCount) the TP has finished with HTTP status code.
func (tp *TP) ResponseCount(verb, resource string, code int) int {
	tp.metrics.mu.Lock()
	defer tp.metrics.mu.Unlock()
	return tp.metrics.codes[[3]string{verb, resource, strconv.Itoa(code)}]
}

func (m *metrics) started(verb, res string) {
	m.mu.Lock()
	if m.counts == nil {
		m.counts = map[[2]string]int{}
	}
	m.counts[[2]string{verb, res}]++
	m.mu.Unlock()
}

// RequestCount returns how many requests of verb ("get", "list", "watch",
// "create", "update", "patch", "delete", "deletecollection") on resource
// ("pods", "pods/status", ...) the TP has started to serve, whatever their
// outcome.
// Tests use it to see that a client relisted or re-watched.
func (tp *TP) RequestCount(verb, resource string) int {
	tp.metrics.mu.Lock()
	defer tp.metrics.mu.Unlock()
	return tp.metrics.counts[[2]string{verb, resource}]
}

// codeRecorder remembers the status code for metrics and lets watches flush.
type codeRecorder struct {
	http.ResponseWriter
	code int
}

func (c *codeRecorder) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *codeRecorder) Write(b []byte) (int, error) {
	if c.code == 0 {
		c.code = http.StatusOK
	}
	return c.ResponseWriter.Write(b)
}

func (c *codeRecorder) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *codeRecorder) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// ServeHTTP serves the TP's API. It is the handler of the TP's listener, and
// can be mounted elsewhere (httptest) as well.
func (tp *TP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d := time.Duration(tp.latency.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	rec := &codeRecorder{ResponseWriter: w}
	verb, res := "other", ""
	defer func() {
		if p := recover(); p != nil {
			// A bug, never input: log it and answer 500 rather than drop
			// the connection, so the client sees what happened.
			klog.ErrorS(nil, "Panic serving request", "tp", tp.name, "path", r.URL.Path, "panic", p)
			if rec.code == 0 {
				writeError(rec, errors.New("internal error"))
			}
		}
		tp.metrics.count(verb, res, rec.code)
	}()
	if tp.outage.Load() == int32(OutageUnavailable) {
		writeError(rec, errUnavailable("fake-tp "+tp.name+" is in an injected outage"))
		return
	}
	p := r.URL.Path
	switch {
	case p == "/healthz" || p == "/livez" || p == "/readyz" || strings.HasPrefix(p, "/healthz/") || strings.HasPrefix(p, "/livez/") || strings.HasPrefix(p, "/readyz/"):
		verb = "health"
		tp.ops.Handler().ServeHTTP(rec, r)
		return
	case p == "/metrics":
		verb = "metrics"
		promhttp.HandlerFor(tp.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP(rec, r)
		return
	}
	if tp.st() == nil {
		writeError(rec, errUnavailable("fake-tp "+tp.name+" has not been started"))
		return
	}
	user, err := tp.authenticate(r)
	if err != nil {
		writeError(rec, err)
		return
	}
	ctx := context.WithValue(r.Context(), userKey{}, user)
	r = r.WithContext(ctx)
	switch {
	case p == "/version" || p == "/version/":
		verb = "get"
		writeJSON(rec, http.StatusOK, serverVersion)
	case p == "/api" || strings.HasPrefix(p, "/api/") || p == "/apis" || strings.HasPrefix(p, "/apis/"):
		verb, res = tp.serveAPI(rec, r)
	case strings.HasPrefix(p, "/openapi/"):
		verb = "get"
		tp.serveOpenAPI(rec, r)
	default:
		writeError(rec, notFoundPath(p))
	}
}

type userKey struct{}

func userFrom(ctx context.Context) admission.UserInfo {
	u, _ := ctx.Value(userKey{}).(admission.UserInfo)
	return u
}

// authenticate maps the request's bearer token to a user. No token means
// the default admin, so curl and quick tests need no credentials. Admins may
// impersonate (kubectl --as, --as-group), which is how tests act as others
// without a kubeconfig of their own.
func (tp *TP) authenticate(r *http.Request) (admission.UserInfo, error) {
	var u *admission.User
	h := r.Header.Get("Authorization")
	switch {
	case h == "":
		u = AdminUser()
	case strings.HasPrefix(h, "Bearer "):
		tp.mu.Lock()
		id, ok := tp.tokens[strings.TrimPrefix(h, "Bearer ")]
		tp.mu.Unlock()
		if !ok {
			return nil, errUnauthorized()
		}
		u = id.user()
	default:
		return nil, errUnauthorized()
	}
	as := r.Header.Get("Impersonate-User")
	if as == "" {
		return u, nil
	}
	if !isAdmin(u) {
		return nil, errForbiddenImpersonation(u.Name, as)
	}
	imp := &admission.User{Name: as, Groups: r.Header.Values("Impersonate-Group"), Extra: map[string][]string{}}
	for k, v := range r.Header {
		if rest, ok := strings.CutPrefix(k, "Impersonate-Extra-"); ok {
			imp.Extra[strings.ToLower(rest)] = v
		}
	}
	if len(imp.Extra) == 0 {
		imp.Extra = nil
	}
	return imp, nil
}

func isAdmin(u *admission.User) bool {
	for _, g := range u.Groups {
		if g == "system:masters" {
			return true
		}
	}
	return false
}

// AdminUser is the default identity: the cluster admin of the system
// tenant.
func AdminUser() *admission.User {
	return &admission.User{
		Name:   "admin",
		Groups: []string{"system:masters", "system:authenticated"},
		Extra:  map[string][]string{admission.UserTenantExtraKey: {tenancy.SystemTenant}},
	}
}

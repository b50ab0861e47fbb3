package ops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// Check reports a component's state: nil when it is fine, or why it is not.
type Check func() error

// Timeouts bound what a client can hold of a server: a connection that
// sends its request slowly, or stays idle, is closed, so that slow or idle
// clients cannot exhaust the file descriptors the program needs.
type Timeouts struct {
	// ReadHeader bounds reading the request headers; Read the whole request,
	// body included.
	ReadHeader, Read time.Duration
	// Write bounds writing a response (metrics of a large registry take a
	// while on a busy node, so it is generous).
	Write time.Duration
	// Idle is how long a keep-alive connection may wait for its next request.
	Idle time.Duration
	// MaxHeaderBytes caps the request headers.
	MaxHeaderBytes int
}

// DefaultTimeouts are every ops server's unless Server.Timeouts is changed.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: time.Minute, Idle: 90 * time.Second, MaxHeaderBytes: 64 << 10}

// Server serves the operational endpoints of one program. Build it with New,
// add checks, then Serve. The zero value is not usable.
type Server struct {
	// Timeouts of the HTTP server; set before Serve.
	Timeouts Timeouts

	mux *http.ServeMux

	mu      sync.RWMutex
	healthz map[string]Check
	readyz  map[string]Check
}

// New returns a Server whose /metrics serves reg (nothing when reg is nil).
func New(reg *prometheus.Registry) *Server {
	s := &Server{Timeouts: DefaultTimeouts, mux: http.NewServeMux(), healthz: map[string]Check{}, readyz: map[string]Check{}}
	s.mux.HandleFunc("/healthz", s.serveChecks(s.healthz))
	s.mux.HandleFunc("/livez", s.serveChecks(s.healthz))
	s.mux.HandleFunc("/readyz", s.serveChecks(s.readyz))
	if reg != nil {
		s.mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	}
	return s
}

// AddHealthz adds a liveness check, served by /healthz and /livez.
func (s *Server) AddHealthz(name string, c Check) { s.add(s.healthz, name, c) }

// AddReadyz adds a readiness check, served by /readyz.
func (s *Server) AddReadyz(name string, c Check) { s.add(s.readyz, name, c) }

func (s *Server) add(m map[string]Check, name string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m[name] = c
}

// LivenessHandler serves the liveness checks, as /healthz does, for
// mounting under another path (CoreDNS's /health).
func (s *Server) LivenessHandler() http.Handler { return s.serveChecks(s.healthz) }

// ReadinessHandler serves the readiness checks, as /readyz does, for
// mounting under another path (CoreDNS's /ready).
func (s *Server) ReadinessHandler() http.Handler { return s.serveChecks(s.readyz) }

// Handle mounts an extra handler (an admin endpoint, a webhook) on the mux.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Handler returns the server's mux, for tests and for embedding.
func (s *Server) Handler() http.Handler { return s.mux }

// serveChecks answers 200 "ok" when every check passes, else 503 with one
// line per failing check. "?verbose" lists passing checks too, as the
// Kubernetes API server does.
func (s *Server) serveChecks(m map[string]Check) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Copy the checks under the lock: one added while they run must not
		// race with this read of the map.
		s.mu.RLock()
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		checks := make([]Check, len(names))
		for i, n := range names {
			checks[i] = m[n]
		}
		s.mu.RUnlock()
		var b strings.Builder
		failed := false
		_, verbose := r.URL.Query()["verbose"]
		for i, n := range names {
			if err := checks[i](); err != nil {
				failed = true
				fmt.Fprintf(&b, "[-]%s failed: %v\n", n, err)
			} else if verbose {
				fmt.Fprintf(&b, "[+]%s ok\n", n)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if failed {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, b.String())
			return
		}
		fmt.Fprint(w, b.String())
		fmt.Fprint(w, "ok\n")
	}
}

// Serve listens on addr and serves until ctx ends, then shuts down gracefully
// within a few seconds. It returns the listen error, if any.
func (s *Server) Serve(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ops server: listening on %s: %w", addr, err)
	}
	return s.ServeListener(ctx, ln)
}

// ServeListener is Serve on an existing listener.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener) error {
	t := s.Timeouts
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write,
		IdleTimeout: t.Idle, MaxHeaderBytes: t.MaxHeaderBytes}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	klog.InfoS("Serving operational endpoints", "address", ln.Addr().String())
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return err
}

// SignalContext returns a context cancelled by the first SIGTERM or SIGINT.
// A second signal exits the process at once, as kubelet does.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		select {
		case sig := <-ch:
			klog.InfoS("Shutting down", "signal", sig.String())
			cancel()
		case <-ctx.Done():
			signal.Stop(ch)
			return
		}
		<-ch
		klog.InfoS("Second signal, exiting now")
		os.Exit(1)
	}()
	return ctx, cancel
}

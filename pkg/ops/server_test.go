package ops

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestServerEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "tpkit_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Inc()

	s := New(reg)
	var ready atomic.Bool
	s.AddHealthz("ping", func() error { return nil })
	s.AddReadyz("partitions", func() error {
		if ready.Load() {
			return nil
		}
		return errors.New("partition tp2 not synced")
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeListener(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		path     string
		code     int
		contains string
	}{
		{"/healthz", 200, "ok"},
		{"/livez?verbose", 200, "[+]ping ok"},
		{"/readyz", 503, "[-]partitions failed: partition tp2 not synced"},
		{"/metrics", 200, "tpkit_test_total 1"},
	} {
		code, body := get(tc.path)
		if code != tc.code || !strings.Contains(body, tc.contains) {
			t.Errorf("GET %s = %d %q, want %d containing %q", tc.path, code, body, tc.code, tc.contains)
		}
	}
	ready.Store(true)
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("GET /readyz after ready = %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("graceful shutdown returned %v", err)
	}
}

package ops

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// TestServerClosesSlowAndIdleClients: a client that sends its headers too
// slowly, and a keep-alive connection left idle, are both closed by the
// server; a client that behaves is still served meanwhile.
func TestServerClosesSlowAndIdleClients(t *testing.T) {
	s := New(nil)
	s.AddHealthz("ping", func() error { return nil })
	s.Timeouts = Timeouts{ReadHeader: 200 * time.Millisecond, Read: 200 * time.Millisecond, Write: time.Second, Idle: 200 * time.Millisecond, MaxHeaderBytes: 4 << 10}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeListener(ctx, ln) }()
	defer func() { cancel(); <-done }()

	// closed reads from c until the server closes it; the deadline is only
	// a hang guard.
	closed := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := io.ReadAll(c)
		return err == nil // EOF: the server closed it
	}
	slow, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil { // never ends its headers
		t.Fatal(err)
	}
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first request on the keep-alive connection: %v %v", err, resp)
	}
	resp.Body.Close()
	big, err := http.Get("http://" + ln.Addr().String() + "/healthz?" + strings.Repeat("x", 8<<10))
	if err != nil {
		t.Fatal(err)
	}
	big.Body.Close()
	if big.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("headers over MaxHeaderBytes: %d, want 431", big.StatusCode)
	}
	if !closed(slow) {
		t.Error("the server kept a client that never finished its headers")
	}
	if !closed(idle) {
		t.Error("the server kept an idle keep-alive connection")
	}
	if r, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("a well-behaved client after the slow ones: %v %v", err, r)
	} else {
		r.Body.Close()
	}
}

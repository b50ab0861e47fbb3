//go:build linux

package hostile

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// idleConn is a keep-alive connection that has had its answer and sends
// nothing more.
type idleConn struct {
	conn     *tls.Conn
	answered time.Time
}

// TestWebhookIdleConnections: 10,000 clients each send one request on a
// keep-alive connection and then stay silent. The webhook closes each one
// after --http-idle-timeout, not before, and answers admission reviews
// all the while.
func TestWebhookIdleConnections(t *testing.T) {
	const conns = 10000
	const idle = 12 * time.Second
	w := start(t, "tp-admission-webhook", "tp-admission-webhook", "--self-signed-dir", t.TempDir(),
		"--listen", "127.0.0.1:0", "--http-idle-timeout", idle.String())
	lines := w.WaitOutput(t, `"Serving admission webhook"`, 1)
	m := regexp.MustCompile(`address="([^"]+)"`).FindStringSubmatch(lines[0])
	if m == nil {
		t.Fatalf("no address in %q", lines[0])
	}
	addr := m[1]
	// The certificate is not what this test checks; plain X25519 keeps
	// 10,000 handshakes cheap (the default adds ML-KEM).
	tlsConfig := &tls.Config{InsecureSkipVerify: true, CurvePreferences: []tls.CurveID{tls.X25519}}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}

	review := func(tenant string) (allowed bool, message string) {
		t.Helper()
		body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",
			"kind":{"group":"apps","version":"v1","kind":"DaemonSet"},"resource":{"group":"apps","version":"v1","resource":"daemonsets"},
			"operation":"CREATE","namespace":"default","name":"ds","userInfo":{"username":"u"},
			"object":{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds","namespace":"default","tenant":"` + tenant + `"}}}}`
		resp, err := client.Post("https://"+addr+"/validate", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("admission review while idle connections are open: %v", err)
		}
		defer resp.Body.Close()
		var out struct {
			Response struct {
				Allowed bool
				Status  struct{ Message string }
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("admission review answer: %v", err)
		}
		return out.Response.Allowed, out.Response.Status.Message
	}
	checkAdmission := func(when string) {
		t.Helper()
		if ok, msg := review("acme"); ok || !strings.Contains(msg, "only system tenant is allowed to have DaemonSet") {
			t.Errorf("%s: a DaemonSet in tenant acme: allowed=%v %q", when, ok, msg)
		}
		if ok, msg := review("system"); !ok {
			t.Errorf("%s: a DaemonSet in tenant system refused: %q", when, msg)
		}
	}
	checkAdmission("before")

	// Open the connections: a request and its answer on each, then silence.
	opened := make([]idleConn, conns)
	var failed atomic.Int64
	var firstErr sync.Once
	var wg sync.WaitGroup
	next := atomic.Int64{}
	openStart := time.Now()
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= conns {
					return
				}
				c, err := tls.Dial("tcp", addr, tlsConfig)
				if err == nil {
					_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: webhook\r\n\r\n")
				}
				var resp *http.Response
				if err == nil {
					resp, err = http.ReadResponse(bufio.NewReader(c), nil)
				}
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil {
					failed.Add(1)
					firstErr.Do(func() { t.Errorf("connection %d: %v", i, err) })
					if c != nil {
						c.Close()
					}
					continue
				}
				opened[i] = idleConn{conn: c, answered: time.Now()}
			}
		}()
	}
	wg.Wait()
	t.Logf("opened %d connections in %v", conns, time.Since(openStart).Round(time.Millisecond))
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d connections failed", n, conns)
	}
	checkAdmission("with the idle connections open")
	fds := metric(t, client, "https://"+addr+"/metrics", "process_open_fds")
	t.Logf("webhook: %.0f open file descriptors with %d idle connections", fds, conns)

	// Each connection is closed by the server after the idle timeout. A few
	// workers wait on them in the order they were answered (the race
	// detector allows 8,128 goroutines, not one per connection).
	// One deadline for all: every connection was answered by now, so the
	// server must have closed each by now+idle. (A deadline from each
	// answer would expire before its read on a loaded machine, where the
	// opening outlasts idle+Deadline, and hide a close already made.)
	closedBy := time.Now().Add(idle + testbin.Deadline)
	var early, never atomic.Int64
	const workers = 32
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1)
			for i := w; i < len(opened); i += workers {
				c := opened[i]
				_ = c.conn.SetReadDeadline(closedBy)
				n, err := c.conn.Read(buf)
				closed := time.Now()
				c.conn.Close()
				switch {
				case n > 0 || err == nil, errors.Is(err, os.ErrDeadlineExceeded):
					never.Add(1) // the server sent something, or kept it open
				case closed.Sub(c.answered) < idle/2:
					early.Add(1) // closed, but long before it was idle for the timeout
				}
			}
		}()
	}
	wg.Wait()
	if n := never.Load(); n > 0 {
		t.Errorf("%d of %d idle connections were not closed by the server", n, conns)
	}
	if n := early.Load(); n > 0 {
		t.Errorf("%d of %d idle connections were closed before the idle timeout", n, conns)
	}
	checkAdmission("after")
	if after := metric(t, client, "https://"+addr+"/metrics", "process_open_fds"); after > fds/10 {
		t.Errorf("the webhook holds %.0f file descriptors after the idle connections were closed (%.0f with them)", after, fds)
	}
}

//go:build linux

package hostile

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
	// The certificate is not what this test checks (the reviews' client;
	// idleclients opens the idle connections).
	tlsConfig := &tls.Config{InsecureSkipVerify: true}
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
	// idleclients does it in a process of its own, without the race
	// detector: 10,000 handshakes in this test binary took about 25 s of
	// CPU. Its grace for late closes, 30 s, ends well within WaitOutput's
	// minute, so that connections left open are counted, not timed out.
	openStart := time.Now()
	clients := start(t, "idleclients", "idleclients", "--addr", addr, "--conns", strconv.Itoa(conns),
		"--idle", idle.String(), "--grace", "30s")
	clients.WaitOutput(t, "OPENED ", 1)
	t.Logf("opened %d connections in %v", conns, time.Since(openStart).Round(time.Millisecond))
	checkAdmission("with the idle connections open")
	fds := metric(t, client, "https://"+addr+"/metrics", "process_open_fds")
	t.Logf("webhook: %.0f open file descriptors with %d idle connections", fds, conns)
	// Within half the timeout of the first answer none may be closed yet;
	// a loaded machine can take longer than the timeout to open them all.
	if since := time.Since(openStart); since < idle/2 && fds < conns {
		t.Fatalf("the webhook holds %.0f file descriptors %v after the first connection opened: the %d idle connections are not all open", fds, since.Round(time.Millisecond), conns)
	}

	// Each connection is closed by the server after the idle timeout, not
	// before half of it (idleclients counts both).
	res := clients.WaitOutput(t, "RESULT ", 1)[0]
	var never, early int
	if _, err := fmt.Sscanf(res[strings.Index(res, "RESULT "):], "RESULT never=%d early=%d", &never, &early); err != nil {
		t.Fatalf("idleclients said %q: %v", res, err)
	}
	if never > 0 {
		t.Errorf("%d of %d idle connections were not closed by the server", never, conns)
	}
	if early > 0 {
		t.Errorf("%d of %d idle connections were closed before the idle timeout", early, conns)
	}
	checkAdmission("after")
	if after := metric(t, client, "https://"+addr+"/metrics", "process_open_fds"); after > fds/10 {
		t.Errorf("the webhook holds %.0f file descriptors after the idle connections were closed (%.0f with them)", after, fds)
	}
}

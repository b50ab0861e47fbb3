package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tpkit-dev/tpkit/pkg/admission/daemonset"
	"github.com/tpkit-dev/tpkit/pkg/admission/webhook"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// webhookServer is the real program, run in-process on 127.0.0.1:0.
type webhookServer struct {
	base   string
	client *http.Client
	done   chan error
	cancel context.CancelFunc
}

// run is main without the process: it parses args, serves until ctx
// ends, and returns after a graceful shutdown. listening, when not nil, is
// told the bound address.
func run(ctx context.Context, args []string, stderr io.Writer, listening func(net.Addr)) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	return serve(ctx, o, listening)
}

func startServer(t testing.TB, extraArgs ...string) *webhookServer {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	addrCh := make(chan net.Addr, 1)
	done := make(chan error, 1)
	args := append([]string{"--listen", "127.0.0.1:0", "--self-signed-dir", dir}, extraArgs...)
	go func() { done <- run(ctx, args, io.Discard, func(a net.Addr) { addrCh <- a }) }()
	var addr net.Addr
	select {
	case addr = <-addrCh:
	case err := <-done:
		cancel()
		t.Fatalf("server exited: %v", err)
	}
	s := &webhookServer{base: "https://" + addr.String(), client: trustingClient(t, filepath.Join(dir, webhook.CAFileName)), done: done, cancel: cancel}
	t.Cleanup(func() {
		s.client.CloseIdleConnections()
		s.stop(t)
	})
	return s
}

func (s *webhookServer) stop(t testing.TB) {
	s.cancel()
	select {
	case err, ok := <-s.done:
		if ok && err != nil {
			t.Errorf("server: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("server did not stop")
	}
}

// trustingClient trusts only the CA bundle the server wrote.
func trustingClient(t testing.TB, caFile string) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no CA in bundle")
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
	}}
}

func reviewBody(uid, op, group, resource, kind, name, objField, obj string, user string) string {
	return fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":%q,`+
		`"kind":{"group":%q,"version":"v1","kind":%q},"resource":{"group":%q,"version":"v1","resource":%q},`+
		`"namespace":"kube-system","name":%q,"operation":%q,"userInfo":%s,%q:%s}}`,
		uid, group, kind, group, resource, name, op, user, objField, obj)
}

const (
	alice  = `{"username":"alice","groups":["system:authenticated"],"extra":{"tenant":["t1"]}}`
	admin  = `{"username":"kubernetes-admin","groups":["system:masters","system:authenticated"]}`
	sysOps = `{"username":"sam","groups":["system:authenticated"],"extra":{"tenant":["system"]}}`
)

func ds(tenant string) string {
	return `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds1","namespace":"kube-system","tenant":"` + tenant + `"}}`
}

func (s *webhookServer) review(t testing.TB, body string) (int, *admissionv1.AdmissionReview, string) {
	t.Helper()
	resp, err := s.client.Post(s.base+ValidatePath, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, string(b)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(b, &out); err != nil || out.Response == nil {
		t.Fatalf("bad response %s: %v", b, err)
	}
	return resp.StatusCode, &out, string(b)
}

func TestWebhookOverHTTPS(t *testing.T) {
	s := startServer(t)
	cases := []struct {
		name        string
		body        string
		wantAllowed bool
		wantMessage string
	}{
		{"daemonset in system allowed", reviewBody("1", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", "object", ds("system"), alice), true, ""},
		{"daemonset in t1 denied", reviewBody("2", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", "object", ds("t1"), admin), false,
			`daemonsets.apps "ds1" is forbidden: only system tenant is allowed to have DaemonSet`},
		{"daemonset update in t1 denied", reviewBody("3", "UPDATE", "apps", "daemonsets", "DaemonSet", "ds1", "object", ds("t1"), admin), false, daemonset.Message},
		{"daemonset delete in t1 allowed", reviewBody("4", "DELETE", "apps", "daemonsets", "DaemonSet", "ds1", "oldObject", ds("t1"), alice), true, ""},
		{"configmap in t1 allowed", reviewBody("5", "CREATE", "", "configmaps", "ConfigMap", "c", "object", `{"metadata":{"name":"c","tenant":"t1"}}`, alice), true, ""},
		{"tenant all denied", reviewBody("6", "CREATE", "", "tenants", "Tenant", "all", "object", `{"metadata":{"name":"all"}}`, admin), false, `tenant name "all" is reserved`},
		{"tenant Bad_Name denied", reviewBody("7", "CREATE", "", "tenants", "Tenant", "Bad_Name", "object", `{"metadata":{"name":"Bad_Name"}}`, admin), false, "not a DNS-1123 label"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, raw := s.review(t, tc.body)
			if code != 200 {
				t.Fatalf("status %d: %s", code, raw)
			}
			if out.Response.Allowed != tc.wantAllowed {
				t.Fatalf("allowed %v, want %v: %s", out.Response.Allowed, tc.wantAllowed, raw)
			}
			if !tc.wantAllowed && !strings.Contains(out.Response.Result.Message, tc.wantMessage) {
				t.Fatalf("message %q lacks %q", out.Response.Result.Message, tc.wantMessage)
			}
		})
	}
	t.Run("malformed", func(t *testing.T) {
		for _, body := range []string{"", "{", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`} {
			code, _, raw := s.review(t, body)
			if code != http.StatusBadRequest || len(strings.TrimSpace(raw)) == 0 {
				t.Errorf("body %q: %d %q, want 400 with a message", body, code, raw)
			}
		}
	})
	t.Run("healthz readyz metrics", func(t *testing.T) {
		for path, want := range map[string]string{
			"/healthz": "ok",
			"/readyz":  "ok",
			"/metrics": `tpkit_admission_webhook_requests_total{decision="denied",operation="CREATE",resource="daemonsets"} 1`,
		} {
			resp, err := s.client.Get(s.base + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
				t.Errorf("%s: %d, body lacks %q", path, resp.StatusCode, want)
			}
		}
	})
	t.Run("http2", func(t *testing.T) {
		resp, err := s.client.Get(s.base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Errorf("protocol %s, want HTTP/2 as the API server's client negotiates", resp.Proto)
		}
	})
}

func TestWebhookAdminOnly(t *testing.T) {
	s := startServer(t, "--admin-only", "--admin-groups", "ops,system:masters")
	for _, tc := range []struct {
		user, op, field string
		allowed         bool
	}{
		{admin, "CREATE", "object", true},
		{sysOps, "UPDATE", "object", true},
		{`{"username":"olga","groups":["ops"]}`, "DELETE", "oldObject", true},
		{alice, "CREATE", "object", false},
		{alice, "DELETE", "oldObject", false},
		{`{"username":"nobody"}`, "UPDATE", "object", false},
	} {
		_, out, raw := s.review(t, reviewBody("u", tc.op, "apps", "daemonsets", "DaemonSet", "ds1", tc.field, ds("system"), tc.user))
		if out == nil || out.Response.Allowed != tc.allowed {
			t.Errorf("%s %s: %s, want allowed=%v", tc.user, tc.op, raw, tc.allowed)
			continue
		}
		var u struct{ Username string }
		json.Unmarshal([]byte(tc.user), &u)
		if !tc.allowed && !strings.Contains(out.Response.Result.Message, `user "`+u.Username+`"`) {
			t.Errorf("denial %q does not name %s", out.Response.Result.Message, u.Username)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "a serving certificate is required"},
		{[]string{"--tls-cert-file", "x"}, "a serving certificate is required"},
		{[]string{"--self-signed-dir", dir, "--tls-cert-file", "x"}, "excludes"},
		{[]string{"--tls-cert-file", filepath.Join(dir, "no.crt"), "--tls-private-key-file", filepath.Join(dir, "no.key")}, "no such file"},
		{[]string{"--self-signed-dir", dir, "--listen", "256.0.0.1:x"}, "--listen"},
		{[]string{"--self-signed-dir", dir, "--listen", "256.0.0.1:8443"}, "--listen"},
		{[]string{"--self-signed-dir", dir, "--shutdown-delay", "-1s"}, "--shutdown-delay"},
		{[]string{"--no-such-flag"}, "not defined"},
		{[]string{"--self-signed-dir", dir, "stray"}, "unexpected arguments"},
		{[]string{"--self-signed-dir", dir, "--http-idle-timeout", "0s"}, "must be positive"},
	} {
		err := run(context.Background(), tc.args, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestMain lets the SIGTERM test run this binary as the real program.
func TestMain(m *testing.M) {
	testbin.AsMain("tp-admission-webhook", main)
	os.Exit(m.Run())
}

// TestCommandLine runs the program: --help and --version exit 0 and print
// in the Kubernetes style; a bad flag value exits 2 naming the flag.
func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--help"}, 0, []string{"Usage:\n  tp-admission-webhook [flags]", "\nFlags:\n", "--http-idle-timeout duration", "\nLogging flags:\n"}},
		{[]string{"--version"}, 0, []string{"tp-admission-webhook ", "commit "}},
		{[]string{"--listen", "300.1.1.1:8443"}, 2, []string{"--listen"}},
		{[]string{"--http-idle-timeout", "-5s"}, 2, []string{"--http-idle-timeout"}},
		{[]string{"--no-such-flag"}, 2, []string{"no-such-flag"}},
	} {
		out, err := testbin.Command(tc.args...).CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, code, tc.code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
	}
}

func TestGracefulSIGTERM(t *testing.T) {
	dir := t.TempDir()
	cmd := testbin.Command("--listen", "127.0.0.1:0", "--self-signed-dir", dir)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// The log line says where it listens.
	addrRE := regexp.MustCompile(`"Serving admission webhook".* address="([^"]+)"`)
	sc := bufio.NewScanner(stderr)
	var addr string
	var logs strings.Builder
	for sc.Scan() {
		logs.WriteString(sc.Text() + "\n")
		if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		t.Fatalf("no listen address in logs:\n%s", logs.String())
	}
	c := trustingClient(t, filepath.Join(dir, webhook.CAFileName))
	resp, err := c.Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stderr)
	logs.Write(rest)
	err = cmd.Wait()
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), `"Shutting down" signal="terminated"`) || !strings.Contains(logs.String(), `"Stopped"`) {
		t.Errorf("logs do not show a graceful stop:\n%s", logs.String())
	}
}

// TestShutdownDelay: after the signal, /readyz fails at once so endpoints
// drop the replica, while reviews are still answered until the delay ends.
func TestShutdownDelay(t *testing.T) {
	s := startServer(t, "--shutdown-delay", "5s")
	get := func(path string) int {
		resp, err := s.client.Get(s.base + path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/readyz"); code != 200 {
		t.Fatalf("readyz before shutdown: %d", code)
	}
	s.cancel()
	for get("/readyz") != http.StatusServiceUnavailable {
		time.Sleep(10 * time.Millisecond)
	}
	code, out, raw := s.review(t, reviewBody("late", "CREATE", "apps", "daemonsets", "DaemonSet", "ds1", "object", ds("t1"), admin))
	if code != 200 || out.Response.Allowed {
		t.Fatalf("review while draining: %d %s", code, raw)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatal(err)
		}
		close(s.done) // startServer's cleanup sees the server already stopped
	case <-time.After(time.Minute):
		t.Fatal("server did not stop after the delay")
	}
}

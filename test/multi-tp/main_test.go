//go:build linux

package multitp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/corelog"
	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/testbed/kubeproxyk8s"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
	tporigink8s "github.com/tpkit-dev/tpkit/testbed/tporigink8s"
)

// binDir holds the programs TestMain built.
var binDir string

// TestMain builds the real programs once for the whole run.
func TestMain(m *testing.M) {
	os.Exit(testbin.RunWith(m, &binDir, "./cmd/fake-tp", "./cmd/partition-dns", "./cmd/tp-admission-webhook"))
}

// deadline bounds every wait in the suite. It only detects hangs: nothing
// asserts how fast anything is.
const deadline = testbin.Deadline

// proc is a running program.
type proc = testbin.Proc

// start runs one of the built programs for the test t; see testbin.Start.
func start(t *testing.T, label, program string, args ...string) *proc {
	t.Helper()
	return testbin.Start(t, t, label, filepath.Join(binDir, program), args...)
}

// startOwned is start for a program that outlives the subtest t starting
// it: owner, an enclosing test, stops it.
func startOwned(t, owner *testing.T, label, program string, args ...string) *proc {
	t.Helper()
	return testbin.Start(t, owner, label, filepath.Join(binDir, program), args...)
}

func freePort(t *testing.T) string { return testbin.FreePort(t) }

// httpGet returns the status and body of a GET, or 0 and the error text.
func httpGet(url string) (int, string) { return testbin.Get(url) }

// tpRequest sends method path (with body, a merge patch for PATCH) to the
// TP of kubeconfig, authenticated as the kubeconfig says, and returns the
// status and body as the TP serves them (Arktos JSON, metadata.tenant
// included). A request that gets no answer fails the test.
func tpRequest(t *testing.T, kubeconfig, method, path, body string) (int, []byte) {
	t.Helper()
	code, b, err := sendRequest(kubeconfig, method, path, body, 30*time.Second)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return code, b
}

// tryRequest is tpRequest for callers outside the test's goroutine, and
// for TPs that may be down: it returns the status, or an error when no
// answer came within timeout.
func tryRequest(kubeconfig, method, path, body string, timeout time.Duration) (int, error) {
	code, _, err := sendRequest(kubeconfig, method, path, body, timeout)
	return code, err
}

func sendRequest(kubeconfig, method, path, body string, timeout time.Duration) (int, []byte, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return 0, nil, err
	}
	// Through the config: HTTPClientFor answers http.DefaultClient itself
	// for a plain config, whose fields are not this function's to set.
	cfg.Timeout = timeout
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(cfg.Host, "/")+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// rawGet reads the object at path from the TP of kubeconfig; anything but
// 200 fails the test.
func rawGet(t *testing.T, kubeconfig, path string) map[string]any {
	t.Helper()
	return mustObject(t, kubeconfig, http.MethodGet, path, "", http.StatusOK)
}

// mustObject sends a request with tpRequest and decodes the object it
// answers; a status outside [want, want+99] fails the test.
func mustObject(t *testing.T, kubeconfig, method, path, body string, want int) map[string]any {
	t.Helper()
	code, b := tpRequest(t, kubeconfig, method, path, body)
	if code < want || code > want+99 {
		t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, b)
	}
	return obj
}

// nodeLibraries is what a node runs in process against the TPs: the
// kube-proxy view and the origin tracker, both synced.
type nodeLibraries struct {
	set     *partition.Set
	view    *kubeproxy.View
	tracker *tporigin.Tracker
}

// startNodeLibraries builds a partition set on o, and on it the kube-proxy
// view (its source as po says) and the origin tracker wired as wo says; it
// waits until the view, the wiring and the set have synced. Everything
// stops when t ends.
func startNodeLibraries(t *testing.T, o partition.Options, po kubeproxyk8s.SourceOptions, wo tporigink8s.WireOptions) *nodeLibraries {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	set, err := partition.New(o)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range set.Partitions() {
		names = append(names, p.Name)
	}
	logger := corelog.Funcs{Info: klog.Infof, Warning: klog.Warningf, Error: klog.Errorf}
	view := kubeproxy.NewView(kubeproxyk8s.PartitionsOf(set).IDs(), kubeproxy.Options{Logger: logger})
	src, err := kubeproxyk8s.NewSource(set, []kubeproxy.ServiceHandler{view}, []kubeproxy.EndpointsHandler{view}, po)
	if err != nil {
		t.Fatal(err)
	}
	tracker, err := tporigin.Open(tporigin.Options{Path: filepath.Join(t.TempDir(), "tporigin.db"), Partitions: names, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tracker.Close() })
	wiring, err := tporigink8s.Wire(tracker, set, wo)
	if err != nil {
		t.Fatal(err)
	}
	go tracker.Run(ctx)
	set.Start(ctx)
	go src.Run(ctx)
	wiring.Start(ctx)
	testbin.Eventually(t, "the kube-proxy view, the origin wiring and the partition set to sync with every TP", func() bool {
		return view.Synced() && wiring.HasSynced() && set.AllSynced()
	})
	return &nodeLibraries{set: set, view: view, tracker: tracker}
}

// field walks nested maps: field(obj, "metadata", "tenant"); nil when absent.
func field(obj map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, path...)
	return v
}

// kubectl runs the real kubectl against one kubeconfig.
type kubectl struct {
	t          *testing.T
	kubeconfig string
	cacheDir   string
}

func newKubectl(t *testing.T, kubeconfig string) *kubectl {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed (not on PATH); this subtest needs the real binary")
	}
	return &kubectl{t: t, kubeconfig: kubeconfig, cacheDir: filepath.Join(t.TempDir(), "cache")}
}

// run returns kubectl's stdout, its stderr, and its error.
func (k *kubectl) run(args ...string) (string, string, error) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cacheDir, "--request-timeout", "30s"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// must runs kubectl, which must succeed, and returns its stdout.
func (k *kubectl) must(args ...string) string {
	k.t.Helper()
	out, errOut, err := k.run(args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// fails runs kubectl, which must fail with want in its output.
func (k *kubectl) fails(want string, args ...string) {
	k.t.Helper()
	out, errOut, err := k.run(args...)
	if err == nil {
		k.t.Fatalf("kubectl %s succeeded, want a failure with %q:\n%s%s", strings.Join(args, " "), want, out, errOut)
	}
	if !strings.Contains(out+errOut, want) {
		k.t.Fatalf("kubectl %s: output lacks %q:\n%s%s", strings.Join(args, " "), want, out, errOut)
	}
}

// writeFile writes content to a new file in a temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// query sends one question over network ("udp" or "tcp") to server, from
// the loopback address from when it is not empty (partition-dns tells the
// querier's TP by its source address).
func query(t *testing.T, server, network, from, name string, qtype uint16) *dns.Msg {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		ip := net.ParseIP(from)
		if network == "tcp" {
			d.LocalAddr = &net.TCPAddr{IP: ip}
		} else {
			d.LocalAddr = &net.UDPAddr{IP: ip}
		}
	}
	c := &dns.Client{Net: network, Dialer: d, Timeout: 5 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := c.Exchange(m, server)
	if err != nil {
		t.Fatalf("%s %s over %s from %q: %v", dns.TypeToString[qtype], name, network, from, err)
	}
	return r
}

// answer renders a reply as "RCODE addr addr ...", the A and AAAA records in
// answer order, so that a test can compare it with one string.
func answer(r *dns.Msg) string {
	s := dns.RcodeToString[r.Rcode]
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			s += " " + rr.A.String()
		case *dns.AAAA:
			s += " " + rr.AAAA.String()
		default:
			s += " " + dns.TypeToString[rr.Header().Rrtype]
		}
	}
	return s
}

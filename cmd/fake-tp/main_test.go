package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// TestHelpAndVersion: fake-tp's --help and --version are a Kubernetes
// component's.
func TestHelpAndVersion(t *testing.T) {
	var out strings.Builder
	if _, err := parseFlags([]string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"Usage:\n  fake-tp [flags]", "\nFlags:\n", "--service-cidr string", "--listen string", "\nLogging flags:\n", "--version"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if _, err := parseFlags([]string{"--version"}, &out); !errors.Is(err, cliflag.ErrVersion) || !strings.HasPrefix(out.String(), "fake-tp ") {
		t.Errorf("--version: %v %q", err, out.String())
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"--partitions", "3", "--listen", "127.0.0.1:7000", "--kubeconfig-dir", "/k", "--seed", "/s",
		"--data-dir", "/d", "--generate", "100", "--watch-list", "ignored", "--endpointslices", "--disable-admission-plugins", "DaemonSetSystemTenant", "--admin-listen", "[::1]:7999"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.opts.Partitions != 3 || c.opts.Listen != "127.0.0.1:7000" || c.opts.KubeconfigDir != "/k" || c.seed != "/s" ||
		c.opts.DataDir != "/d" || c.opts.WatchList != faketp.WatchListIgnored || !c.opts.EndpointSlices || c.generate != 100 || len(c.opts.DisablePlugins) != 1 || c.adminListen != "[::1]:7999" {
		t.Fatalf("parsed %+v", c)
	}
	for _, bad := range [][]string{
		{"--partitions", "0"},
		{"--generate", "-1"},
		{"--admin-listen", "0.0.0.0:7999"},
		{"--admin-listen", "10.0.0.1:7999"},
		{"--admin-listen", "nonsense"},
		{"extra-arg"},
		{"--no-such-flag"},
		{"--watch-list", "sometimes"},
		{"--controllers", "tenant,scheduler"},
		{"--partition-names", "a,b,a"},
		{"--partitions", "2", "--service-cidr", "10.0.0.0/16"},
		{"--service-cidr", "10.0.0.0/16,10.1.0.0/16"},
		{"--partitions", "2", "--service-cidr", "10.0.0.0/16,10.0.255.0/24"},
		{"--service-cidr", "10.0.0.0"},
		{"--partitions", "161"}, // beyond the default ranges
		{"--listen", "6443"},
		{"--listen", "300.0.0.1:6443"},
		{"--admin-listen", "127.0.0.1:99999"},
		{"--watch-history", "0"},
		{"--bookmark-interval", "0s"},
	} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := parseFlags([]string{"--partitions", "0", "--partition-names", "a,b"}, io.Discard); err != nil {
		t.Errorf("--partition-names without --partitions: %v", err)
	}
	// Service ranges: one per TP in order, or the defaults (none).
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "[]"},
		{[]string{"--service-cidr", "10.0.0.0/16"}, "[10.0.0.0/16]"},
		{[]string{"--partition-names", "b,a", "--service-cidr", "10.1.0.0/16, 10.0.0.0/16"}, "[10.1.0.0/16 10.0.0.0/16]"},
	} {
		c, err := parseFlags(tc.args, io.Discard)
		if err != nil || fmt.Sprint(c.opts.ServiceCIDRs) != tc.want {
			t.Errorf("%v: %v %v, want %s", tc.args, err, c, tc.want)
		}
	}
	// Controllers: the default set, a chosen one, or none.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "[tenant endpoints]"},
		{[]string{"--controllers", "tenant"}, "[tenant]"},
		{[]string{"--controllers="}, "[]"},
	} {
		c, err := parseFlags(tc.args, io.Discard)
		if err != nil || fmt.Sprint(c.opts.Controllers) != tc.want || c.opts.Controllers == nil {
			t.Errorf("%v: %v %v, want %s", tc.args, err, c.opts.Controllers, tc.want)
		}
	}
}

// program is a running fake-tp binary.
type program struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  []string
	done chan error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildOnce.path != "" {
		_ = os.RemoveAll(filepath.Dir(buildOnce.path))
	}
	os.Exit(code)
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := testbin.Build("./cmd/fake-tp")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "fake-tp")
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

func start(t *testing.T, args ...string) *program {
	t.Helper()
	p := &program{cmd: exec.Command(binary(t), args...), done: make(chan error, 1)}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			p.mu.Unlock()
		}
	}()
	go func() {
		<-read
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
		}
	})
	return p
}

func (p *program) lines(substr string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.log {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

func (p *program) waitLog(t *testing.T, substr string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if l := p.lines(substr); len(l) >= n {
			return l
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("fake-tp exited (%v) before logging %q:\n%s", err, substr, strings.Join(p.lines(""), "\n"))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d log lines with %q:\n%s", n, substr, strings.Join(p.lines(""), "\n"))
		}
	}
}

// stop sends SIGTERM and requires a clean exit.
func (p *program) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("fake-tp exited with %v after SIGTERM:\n%s", err, strings.Join(p.lines(""), "\n"))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("fake-tp did not stop on SIGTERM")
	}
	if len(p.lines(`"Stopped"`)) != 1 {
		t.Fatalf("no clean-stop log line:\n%s", strings.Join(p.lines(""), "\n"))
	}
}

// freeBase finds n consecutive free loopback ports.
func freeBase(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		ok := base+n < 65535
		for i := 0; ok && i < n; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no consecutive free ports")
	return 0
}

func clientFor(t *testing.T, kubeconfig string) *partitiontest.Clients {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := partitiontest.NewClients(tenancyk8s.WrapConfig(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

var adminAddr = regexp.MustCompile(`"Serving operational endpoints" address="([^"]+)"`)

func TestProgramServesSeedsFaultsAndPersists(t *testing.T) {
	dir := t.TempDir()
	kc, seed, data := filepath.Join(dir, "kc"), filepath.Join(dir, "seed"), filepath.Join(dir, "data")
	if err := os.MkdirAll(filepath.Join(seed, "tp1"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(filepath.Join(seed, p), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("common.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: everywhere, namespace: kube-system}\ndata: {a: b}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: web, tenant: acme}\n")
	write("tp1/own.json", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"only-tp1","namespace":"web","tenant":"acme"},"spec":{"ports":[{"port":80}]}}`)

	base := freeBase(t, 3)
	args := []string{"--partitions", "3", "--listen", "127.0.0.1:" + strconv.Itoa(base), "--kubeconfig-dir", kc,
		"--seed", seed, "--data-dir", data, "--admin-listen", "127.0.0.1:0", "--generate", "200"}
	p := start(t, args...)
	ready := p.waitLog(t, `"Serving tenant partition"`, 3)
	for i, l := range ready {
		name := fmt.Sprintf("tp%d", i+1)
		if !strings.Contains(l, `tp="`+name+`"`) || !strings.Contains(l, fmt.Sprintf("127.0.0.1:%d", base+i)) {
			t.Fatalf("ready line %d: %s", i, l)
		}
	}
	ctx := context.Background()
	clients := map[string]*partitiontest.Clients{}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("tp%d", i)
		path := filepath.Join(kc, name+".kubeconfig")
		cfg, err := clientcmd.LoadFromFile(path)
		if err != nil || cfg.CurrentContext != name || cfg.Clusters[name].Server != fmt.Sprintf("http://127.0.0.1:%d", base+i-1) {
			t.Fatalf("%s: %v %+v", path, err, cfg)
		}
		clients[name] = clientFor(t, path)
	}
	for name, cs := range clients {
		if _, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "everywhere", metav1.GetOptions{}); err != nil {
			t.Fatalf("%s lacks the common seed: %v", name, err)
		}
		_, err := cs.CoreV1().Services("web").Get(tenancyk8s.WithTenant(ctx, "acme"), "only-tp1", metav1.GetOptions{})
		if (err == nil) != (name == "tp1") {
			t.Fatalf("%s: only-tp1 service: %v", name, err)
		}
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 200 {
			t.Fatalf("%s: generated pods: %v %d", name, err, len(pods.Items))
		}
		// --generate makes Endpoints (the endpoints controller runs by
		// default), no EndpointSlices (Arktos has none).
		ep, err := cs.CoreV1().Endpoints("gen-0").Get(ctx, "svc-0", metav1.GetOptions{})
		if err != nil || len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) == 0 {
			t.Fatalf("%s: generated Endpoints: %v %+v", name, err, ep)
		}
		if _, err := cs.DiscoveryV1().EndpointSlices("gen-0").List(ctx, metav1.ListOptions{}); err == nil {
			t.Fatalf("%s serves EndpointSlices without --endpointslices", name)
		}
	}

	// The admin endpoint: a 503 outage on tp2, then back.
	m := adminAddr.FindStringSubmatch(strings.Join(p.waitLog(t, "Serving operational endpoints", 1), ""))
	if m == nil {
		t.Fatal("no admin address in the log")
	}
	admin := "http://" + m[1]
	post := func(path string) {
		t.Helper()
		res, err := http.Post(admin+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("POST %s: %d %s", path, res.StatusCode, b)
		}
	}
	post("/tps/tp2/outage?mode=503")
	if _, err := clients["tp2"].CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "outage") {
		t.Fatalf("tp2 during a 503 outage: %v", err)
	}
	res, err := http.Get(admin + "/readyz")
	if err != nil || res.StatusCode != 503 {
		t.Fatalf("admin readyz during an outage: %v %v", err, res)
	}
	res.Body.Close()
	post("/tps/tp2/outage?mode=none")
	if _, err := clients["tp2"].CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("tp2 after the outage: %v", err)
	}
	post("/tps/tp3/outage?mode=refuse")
	if _, err := clients["tp3"].CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("tp3 refusing: %v", err)
	}
	post("/tps/tp3/outage?mode=none")
	post("/tps/tp1/latency?duration=1ms")
	post("/tps/tp1/close-watches")
	post("/tps/tp1/compact")
	res, err = http.Get(admin + "/tps")
	if err != nil {
		t.Fatal(err)
	}
	var infos []struct{ Name, Outage, Latency string }
	if err := json.NewDecoder(res.Body).Decode(&infos); err != nil || len(infos) != 3 || infos[0].Latency != "1ms" || infos[2].Outage != "none" {
		t.Fatalf("admin listing: %v %+v", err, infos)
	}
	res.Body.Close()

	// Changes, among them to seeded objects; a clean stop; a new process on
	// the same data with the same --seed and --generate, which must not
	// bring the seed back over the changes.
	acme := tenancyk8s.WithTenant(ctx, "acme")
	if _, err := clients["tp1"].CoreV1().ConfigMaps("web").Create(acme, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	every, err := clients["tp1"].CoreV1().ConfigMaps("kube-system").Get(ctx, "everywhere", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	every.Data["a"] = "changed"
	if _, err := clients["tp1"].CoreV1().ConfigMaps("kube-system").Update(ctx, every, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := clients["tp1"].CoreV1().Services("web").Delete(acme, "only-tp1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := clients["tp1"].CoreV1().Pods("gen-0").Delete(ctx, "pod-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p.stop(t)
	p2 := start(t, args...)
	p2.waitLog(t, `"Serving tenant partition"`, 3)
	if n := len(p2.waitLog(t, "Not seeding a tenant partition that started from its data file", 3)); n != 3 {
		t.Fatalf("%d TPs said they were not seeded, want 3", n)
	}
	cm, err := clients["tp1"].CoreV1().ConfigMaps("web").Get(acme, "written", metav1.GetOptions{})
	if err != nil || tenancy.TenantOf(cm) != "acme" {
		t.Fatalf("after a restart on --data-dir: %v", err)
	}
	if every, err := clients["tp1"].CoreV1().ConfigMaps("kube-system").Get(ctx, "everywhere", metav1.GetOptions{}); err != nil || every.Data["a"] != "changed" {
		t.Fatalf("the seed came back over a changed object: %v %v", err, every.Data)
	}
	if _, err := clients["tp1"].CoreV1().Services("web").Get(acme, "only-tp1", metav1.GetOptions{}); err == nil {
		t.Fatal("the seed brought back a deleted service")
	}
	if _, err := clients["tp1"].CoreV1().Pods("gen-0").Get(ctx, "pod-0", metav1.GetOptions{}); err == nil {
		t.Fatal("--generate brought back a deleted pod")
	}
	p2.stop(t)
}

// Bad command lines exit with status 2 and a message naming the flag,
// before any TP starts.
func TestBadCommandLinesExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--partition-names", "a,a"}, `fake-tp: --partition-names: the TP name "a" is given twice: TP names must be distinct`},
		{[]string{"--service-cidr", "nonsense"}, `fake-tp: --service-cidr: "nonsense" is not a CIDR`},
		{[]string{"--partition-names", "a,b", "--service-cidr", "10.0.0.0/16"}, "fake-tp: --service-cidr: ranges given: 1, TPs: 2 (a, b); give one range per TP, in their order"},
		{[]string{"--partitions", "2", "--service-cidr", "10.0.0.0/16,10.0.0.0/24"}, "fake-tp: --service-cidr: the ranges of TPs tp1 (10.0.0.0/16) and tp2 (10.0.0.0/24) overlap"},
	} {
		kc := t.TempDir()
		cmd := exec.Command(binary(t), append(tc.args, "--listen", "127.0.0.1:0", "--admin-listen", "", "--kubeconfig-dir", kc)...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: %v\n%s\nwant exit status 2 and %q", tc.args, err, out, tc.want)
		}
		if m, _ := filepath.Glob(filepath.Join(kc, "*")); len(m) != 0 {
			t.Errorf("%v: wrote %v", tc.args, m)
		}
	}
}

// --service-cidr gives each TP its range: the first service of each TP
// gets the 11th address of its own.
func TestServiceCIDRFlag(t *testing.T) {
	kc := t.TempDir()
	p := start(t, "--partition-names", "a,b", "--service-cidr", "10.0.0.0/16,10.1.0.0/16", "--listen", "127.0.0.1:0", "--admin-listen", "", "--kubeconfig-dir", kc)
	ready := p.waitLog(t, `"Serving tenant partition"`, 2)
	for i, want := range []struct{ name, cidr, ip string }{{"a", "10.0.0.0/16", "10.0.0.11"}, {"b", "10.1.0.0/16", "10.1.0.11"}} {
		if !strings.Contains(ready[i], `serviceCIDR="`+want.cidr+`"`) {
			t.Errorf("ready line %d: %s, want serviceCIDR %s", i, ready[i], want.cidr)
		}
		cs := clientFor(t, filepath.Join(kc, want.name+".kubeconfig"))
		svc, err := cs.CoreV1().Services("default").Create(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		if err != nil || svc.Spec.ClusterIP != want.ip {
			t.Errorf("%s: %v, cluster IP %v, want %s", want.name, err, svc, want.ip)
		}
	}
	p.stop(t)
}

// TestGenerateTenants: --generate-tenants spreads the generated pods over
// the system tenant, in every TP, and regular tenants that each live in
// one TP.
func TestGenerateTenants(t *testing.T) {
	kc := t.TempDir()
	p := start(t, "--partitions", "2", "--listen", "127.0.0.1:0", "--kubeconfig-dir", kc, "--admin-listen", "",
		"--generate", "100", "--generate-tenants", "3")
	p.waitLog(t, `"Serving tenant partition"`, 2)
	want := map[string]map[string]int{
		"tp1": {"system": 34, "gen-tenant-0": 33, "gen-tenant-2": 33},
		"tp2": {"system": 50, "gen-tenant-1": 50},
	}
	for tp, tenants := range want {
		cs := clientFor(t, filepath.Join(kc, tp+".kubeconfig"))
		var pods corev1.PodList // every tenant's: Arktos's /tenants/all/ path
		if err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/tenants/all/pods").Do(context.Background()).Into(&pods); err != nil {
			t.Fatalf("%s: %v", tp, err)
		}
		got := map[string]int{}
		for i := range pods.Items {
			got[tenancy.TenantOf(&pods.Items[i])]++
		}
		if fmt.Sprint(got) != fmt.Sprint(tenants) {
			t.Errorf("%s: pods by tenant %v, want %v", tp, got, tenants)
		}
	}
}

//go:build arktoslab && linux

package arktosnode

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tpkit-dev/tpkit/testbed/arktoslab"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// The lab's names: one node; the TPs are tp1 and tp2 to arktos-lab.sh and
// the lab, and workerTPNames to the node's programs (writeWorkerKubeconfigs).
const (
	nodeName      = "node-1"
	clusterDNS    = "10.96.0.10"
	clusterDomain = "cluster.local"
	secretKey     = "value"
	// Arktos's kubeclientmanager logs this when it falls back to TP 0.
	defaultedToTP0 = "defaulted to client #0"
)

// lab is the running lab: the API servers, the node's programs, their logs
// and what the checks need.
type lab struct {
	t       *testing.T
	bin     string
	dir     string
	stock   bool
	rp      string    // the resource partition's base URL
	tps     [2]string // the TPs' base URLs
	tpKC    [2]string // the TPs' kubeconfigs
	rpKC    string
	tpPID   [2]int      // the TPs' API server pids
	tpArgs  [2][]string // their command lines, to start them again
	node    *exec.Cmd
	nodeLog []string // hollow-node's log of each start
	proxy   *exec.Cmd
	// proxyStarts counts kube-proxy's starts (one log each).
	proxyStarts int
	// restartedAt is when the node started again, with tp1 down.
	restartedAt time.Time
	// kubeDNS are the cluster IPs of kube-system/kube-dns in each TP.
	kubeDNS   [2]string
	tmpBefore map[string]bool // hollow-kubelet.* folders that were there before
	results   []result
}

type result struct {
	name, detail string
	ok           bool
}

// check runs one named check and prints its result. A stock run records a
// failure as a difference; a patched run fails the test.
func (l *lab) check(name string, fn func() error) {
	err := fn()
	r := result{name: name, ok: err == nil}
	if err != nil {
		r.detail = err.Error()
	}
	l.results = append(l.results, r)
	if r.ok {
		fmt.Printf("CHECK %-28s PASS\n", name)
		return
	}
	fmt.Printf("CHECK %-28s FAIL: %s\n", name, r.detail)
	if !l.stock {
		l.t.Errorf("check %s: %s", name, r.detail)
	}
}

func TestArktosNode(t *testing.T) {
	bin := os.Getenv("ARKTOS_BIN")
	if bin == "" || os.Getenv("TPKIT_NODE_LAB") == "" {
		t.Fatal("run this through `make check-arktos-node ARKTOS_BIN=DIR`: it needs Arktos's binaries and a network namespace of its own")
	}
	// run.sh mounts the lab's own tmpfs on /var/lib (make arktos-patch
	// builds the binaries into WORK/bin).
	if err := arktoslab.CheckLabHost("check-arktos-node", bin, "kube-apiserver", "hollow-node", "kube-proxy"); err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, bin: bin, dir: t.TempDir(), tmpBefore: arktoslab.HollowRoots()}
	help, _ := exec.Command(filepath.Join(bin, "hollow-node"), "--help").CombinedOutput()
	l.stock = !bytes.Contains(help, []byte("--tporigin-file"))
	kind := "patched"
	if l.stock {
		kind = "stock (hollow-node has no --tporigin-file)"
	}
	fmt.Printf("== Arktos binaries in %s: %s\n", bin, kind)
	t.Cleanup(l.teardown)

	start := time.Now()
	l.up()
	l.seed()
	l.startNode(false)
	l.check("pods-running-in-own-tp", l.podsRunning)
	l.check("secret-files-from-own-tp", l.secretFiles)
	l.check("tenant-dns-off-stock-resolv", l.tenantDNSOff)
	l.check("events-in-own-tp", l.eventsInOwnTP)
	l.startProxy()
	l.check("same-context-kubeconfigs", l.sameContextNames)
	l.check("kube-dns-dnat-own-tp", l.kubeDNSRules)
	l.check("tenant-service-rules", l.tenantServiceRules)
	l.check("metrics-served", l.metricsServed)
	l.check("hollow-proxy-both-tps", l.hollowProxy)
	l.check("tp-down-keeps-rules", l.tpDownKeepsRules)
	l.check("restart-delete-to-own-tp", l.restartDeletes)
	l.check("proxy-start-with-tp-down", l.proxyStartsWithTPDown)
	l.check("tp-return-resumes-updates", l.tpReturns)
	l.check("tenant-dns-on", l.tenantDNSOn)
	l.check("no-default-to-tp0", l.noDefaultTP0)
	l.check("systemdaemonset-admission", l.daemonSetAdmission)
	l.check("no-cross-tp-redirect", l.noCrossTPRedirect)
	// Last: it restarts tp1 with RBAC and the node with webhook authorization.
	l.check("authz-asks-pod-tp", l.authzAsksPodTP)

	var differ []string
	for _, r := range l.results {
		if !r.ok {
			differ = append(differ, r.name)
		}
	}
	fmt.Printf("== %d checks in %s, failed: %v\n", len(l.results), time.Since(start).Round(time.Second), differ)
	if l.stock {
		fmt.Printf("== stock Arktos differs from tpkit's series in: %s\n", strings.Join(differ, ", "))
	}
}

// up starts the resource partition and the two TPs with arktos-lab.sh, inside
// this namespace (ADVERTISE is the dummy device's address).
func (l *lab) up() {
	t := l.t
	labSH := os.Getenv("LAB_SH")
	if labSH == "" {
		root, err := testbin.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		labSH = filepath.Join(root, "hack", "arktos-lab.sh")
	}
	for _, part := range []struct {
		n   string
		dir string
	}{{"1", "rp"}, {"2", "tps"}} {
		d := filepath.Join(l.dir, part.dir)
		cmd := exec.Command("bash", labSH, "up", part.n, d)
		cmd.Env = append(os.Environ(), "ARKTOS_BIN="+l.bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("arktos-lab.sh up %s %s: %v\n%s", part.n, d, err, out)
		}
	}
	l.rp = readTrim(t, filepath.Join(l.dir, "rp", "tp1", "url"))
	l.rpKC = filepath.Join(l.dir, "rp", "kc", "tp1.kubeconfig")
	pids := testbin.LabPIDs(filepath.Join(l.dir, "tps", "pids"))
	for i := range l.tps {
		l.tps[i] = readTrim(t, filepath.Join(l.dir, "tps", fmt.Sprintf("tp%d", i+1), "url"))
		l.tpKC[i] = filepath.Join(l.dir, "tps", "kc", fmt.Sprintf("tp%d.kubeconfig", i+1))
		// arktos-lab.sh records etcd then the API server, TP by TP.
		l.tpPID[i] = pids[2*i+1]
		args, err := testbin.Cmdline(l.tpPID[i])
		if err != nil {
			t.Fatal(err)
		}
		l.tpArgs[i] = args
	}
	l.writeWorkerKubeconfigs()
	fmt.Printf("== API servers: rp %s, tp1 %s, tp2 %s\n", l.rp, l.tps[0], l.tps[1])
}

// workerKubeconfigContext is the context hack/arktos-worker-up.sh (Arktos
// 6685f14) gives every TP's kubeconfig.
const workerKubeconfigContext = "local-up-cluster"

// workerTPNames are the TP names the patched kubelet and kube-proxy give
// those files: their contexts are all the same, so their base names
// (tenancy.PartitionNames).
var workerTPNames = [2]string{"tenant-server-kubelet0", "tenant-server-kubelet1"}

// writeWorkerKubeconfigs writes the TPs' kubeconfigs for the node's
// programs exactly as hack/arktos-worker-up.sh's write_client_kubeconfig
// does (its scale-out branch: one file per TP, tenant-server-kubelet<N>,
// each with the context local-up-cluster), so the lab's node starts the way
// Arktos's scripts start a worker.
func (l *lab) writeWorkerKubeconfigs() {
	dir := filepath.Join(l.dir, "worker-kc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		l.t.Fatal(err)
	}
	for i, base := range l.tps {
		u, err := url.Parse(base)
		if err != nil {
			l.t.Fatal(err)
		}
		kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
  - cluster:
      server: http://%s:%s/
    name: local-up-cluster
users:
  - user:
    name: local-up-cluster
contexts:
  - context:
      cluster: local-up-cluster
      user: local-up-cluster
    name: local-up-cluster
current-context: %s
`, u.Hostname(), u.Port(), workerKubeconfigContext)
		l.tpKC[i] = filepath.Join(dir, workerTPNames[i]+".kubeconfig")
		if err := os.WriteFile(l.tpKC[i], []byte(kc), 0o600); err != nil {
			l.t.Fatal(err)
		}
	}
}

// seed writes the scenario: in kube-system of both TPs a secret "creds"
// whose value names its TP, a pod "agent" on the node mounting it, and
// kube-dns with its own endpoints; tenant acme in tp2 with a pod and a
// service.
func (l *lab) seed() {
	for i := range l.tps {
		sys := "/api/v1/tenants/system/namespaces/kube-system"
		l.mustWrite(i, "POST", sys+"/secrets", secretJSON("creds", l.secretValue(i)))
		l.mustWrite(i, "POST", sys+"/pods", podJSON("agent", "ClusterFirst"))
		l.mustWrite(i, "POST", sys+"/services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"kube-dns"},"spec":{"ports":[{"name":"dns","port":53,"protocol":"UDP"}]}}`)
		l.mustWrite(i, "POST", sys+"/endpoints", endpointsJSON("kube-dns", "dns", l.dnsEndpoint(i), 53, "UDP"))
	}
	l.mustWrite(1, "POST", "/api/v1/tenants", `{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"acme"},"spec":{"storageClusterId":"0"}}`)
	l.mustWrite(1, "POST", "/api/v1/tenants/acme/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"web"}}`)
	acme := "/api/v1/tenants/acme/namespaces/web"
	l.mustWrite(1, "POST", acme+"/secrets", secretJSON("creds", "acme-in-tp2"))
	l.mustWrite(1, "POST", acme+"/pods", podJSON("app", "ClusterFirst"))
	l.mustWrite(1, "POST", acme+"/services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"app"},"spec":{"ports":[{"name":"http","port":80,"protocol":"TCP"}]}}`)
	l.mustWrite(1, "POST", acme+"/endpoints", endpointsJSON("app", "http", "10.244.9.9", 8080, "TCP"))
}

func (l *lab) secretValue(i int) string { return fmt.Sprintf("kube-system-creds-of-tp%d", i+1) }
func (l *lab) dnsEndpoint(i int) string { return fmt.Sprintf("10.244.%d.10", i+1) }

// pods are the lab's pods: TP index, tenant, namespace, name, secret value.
var pods = []struct {
	tp                            int
	tenant, namespace, name, want string
}{
	{0, "system", "kube-system", "agent", "kube-system-creds-of-tp1"},
	{1, "system", "kube-system", "agent", "kube-system-creds-of-tp2"},
	{1, "acme", "web", "app", "acme-in-tp2"},
}

// startNode starts hollow-node's kubelet for both TPs, with extra flags,
// and returns its kubelet port. The patched binary gets its origin file and
// cluster DNS, and with tenantDNS the TenantDNSSearch feature gate; stock
// hollow-node has none of these flags.
func (l *lab) startNode(tenantDNS bool, extra ...string) (kubeletPort int) {
	kubeletPort = freePort(l.t)
	args := []string{"--morph=kubelet", "--name=" + nodeName,
		"--kubeconfig=" + l.rpKC, "--resource-server-kubeconfig=" + l.rpKC,
		"--tenant-server-kubeconfigs=" + l.tpKC[0] + "," + l.tpKC[1],
		"--kube-api-content-type=application/json",
		"--kubelet-port=" + strconv.Itoa(kubeletPort), "--kubelet-read-only-port=0",
		// The sandbox config (with the pod's DNS) is logged at -v=6 by
		// kuberuntime_sandbox.go, the same line for stock and patched.
		"--v=2", "--vmodule=kuberuntime_sandbox=6"}
	if !l.stock {
		// --send-events: the events-in-own-tp check reads them (patch 0038
		// keeps hollow-node's events in its log by default, as stock's).
		args = append(args, "--tporigin-file="+filepath.Join(l.dir, "tporigin.db"),
			"--cluster-dns="+clusterDNS, "--cluster-domain="+clusterDomain, "--send-events")
		if tenantDNS {
			args = append(args, "--feature-gates=TenantDNSSearch=true")
		}
	}
	log := filepath.Join(l.dir, fmt.Sprintf("hollow-node.%d.log", len(l.nodeLog)+1))
	l.nodeLog = append(l.nodeLog, log)
	l.node = l.spawn(log, "hollow-node", append(args, extra...)...)
	return kubeletPort
}

// proxySyncTimeout is how long the patched kube-proxy waits for a TP that
// does not sync before it programs the others (--tenant-partition-sync-timeout).
const proxySyncTimeout = 3 * time.Second

// startProxy starts kube-proxy in iptables mode for both TPs and waits for
// its /healthz.
func (l *lab) startProxy() {
	healthz := freePort(l.t)
	l.proxyStarts++
	log := l.proxyLog()
	var extra []string
	if !l.stock {
		extra = append(extra, "--tenant-partition-sync-timeout="+proxySyncTimeout.String(),
			"--tenant-partition-state-dir="+filepath.Join(l.dir, "kube-proxy-state"))
	}
	l.proxy = l.spawn(log, "kube-proxy", append(extra,
		"--proxy-mode=iptables", "--kubeconfig="+l.rpKC,
		"--tenant-server-kubeconfig="+l.tpKC[0]+","+l.tpKC[1],
		"--hostname-override="+nodeName, "--bind-address=127.0.0.1",
		"--healthz-bind-address=127.0.0.1", "--healthz-port="+strconv.Itoa(healthz),
		"--metrics-bind-address=127.0.0.1", "--metrics-port="+strconv.Itoa(freePort(l.t)),
		// Conntrack's sysctls are the host's: leave them alone.
		"--conntrack-max-per-core=0", "--conntrack-min=0",
		"--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
		"--iptables-sync-period=30s", "--iptables-min-sync-period=0s", "--v=2")...)
	err := poll(30*time.Second, func() error {
		if !arktoslab.Alive(l.proxy) {
			return fmt.Errorf("kube-proxy exited")
		}
		resp, err := arktoslab.HTTPClient.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz))
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	if err != nil {
		l.t.Fatalf("kube-proxy is not serving /healthz: %v\n%s", err, arktoslab.Tail(log, 30))
	}
}

// spawn starts an Arktos program with its output in log; it dies with the
// test binary (Pdeathsig) and in teardown.
func (l *lab) spawn(log, name string, args ...string) *exec.Cmd {
	cmd, err := arktoslab.Spawn(log, filepath.Join(l.bin, name), args...)
	if err != nil {
		l.t.Fatal(err)
	}
	fmt.Printf("== started %s (pid %d), log %s\n", name, cmd.Process.Pid, log)
	return cmd
}

// podsRunning: every pod Running, as its own TP reports it.
func (l *lab) podsRunning() error {
	return poll(90*time.Second, func() error {
		if !arktoslab.Alive(l.node) {
			return fmt.Errorf("hollow-node exited:\n%s", arktoslab.Tail(l.nodeLog[len(l.nodeLog)-1], 30))
		}
		for _, p := range pods {
			obj, err := l.get(p.tp, podPath(p.tenant, p.namespace, p.name))
			if err != nil {
				return err
			}
			if phase := arktoslab.Str(obj, "status", "phase"); phase != "Running" {
				return fmt.Errorf("%s/%s/%s in tp%d is %q, want Running", p.tenant, p.namespace, p.name, p.tp+1, phase)
			}
		}
		return nil
	})
}

// secretFiles: the file the kubelet wrote for each pod's secret volume
// holds the value of its own TP's secret.
func (l *lab) secretFiles() error {
	var bad []string
	for _, p := range pods {
		obj, err := l.get(p.tp, podPath(p.tenant, p.namespace, p.name))
		if err != nil {
			return err
		}
		uid := arktoslab.Str(obj, "metadata", "uid")
		var got string
		err = poll(20*time.Second, func() error {
			files, _ := filepath.Glob(filepath.Join(arktoslab.HollowTemp, "hollow-kubelet.*", "pods", uid, "volumes", "kubernetes.io~secret", "creds", secretKey))
			if len(files) != 1 {
				return fmt.Errorf("%s/%s/%s (tp%d): %d secret files for uid %s", p.tenant, p.namespace, p.name, p.tp+1, len(files), uid)
			}
			b, err := os.ReadFile(files[0])
			got = string(b)
			return err
		})
		if err != nil {
			return err
		}
		if got != p.want {
			bad = append(bad, fmt.Sprintf("%s/%s/%s of tp%d got %q, want %q", p.tenant, p.namespace, p.name, p.tp+1, got, p.want))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	fmt.Printf("      each pod's secret file holds its own TP's value (%s, %s, %s)\n", pods[0].want, pods[1].want, pods[2].want)
	return nil
}

// tenantDNSOff: the node's first start has TenantDNSSearch off, so every
// pod's DNS configuration is what Arktos's own configurer writes: acme's pod
// searches upstream's <ns>.svc.<zone> path with ndots:5 (stock Arktos's
// cluster DNS serves no tenant names), the cluster DNS its only server.
func (l *lab) tenantDNSOff() error {
	app, agent, err := l.sandboxDNSOf(l.nodeLog[0], [2]string{"app", "web"}, [2]string{"agent", "kube-system"})
	if err != nil {
		return err
	}
	fmt.Printf("      acme/web/app:  searches %v options %v servers %v\n", app.searches, app.options, app.servers)
	fmt.Printf("      system/kube-system/agent: searches %v options %v\n", agent.searches, agent.options)
	for _, p := range []struct {
		who string
		dns sandboxDNS
		ns  string
	}{{"acme's pod", app, "web"}, {"the system pod", agent, "kube-system"}} {
		want := []string{p.ns + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}
		if len(p.dns.searches) < len(want) || strings.Join(p.dns.searches[:len(want)], " ") != strings.Join(want, " ") {
			return fmt.Errorf("tenant DNS off: %s searches %v, want Arktos's %v first", p.who, p.dns.searches, want)
		}
		if !contains(p.dns.options, "ndots:5") || contains(p.dns.options, "ndots:6") {
			return fmt.Errorf("tenant DNS off: %s options %v, want Arktos's ndots:5", p.who, p.dns.options)
		}
		if strings.Join(p.dns.servers, ",") != clusterDNS {
			return fmt.Errorf("tenant DNS off: %s servers %v, want [%s]", p.who, p.dns.servers, clusterDNS)
		}
	}
	return nil
}

// tenantDNSOn: the node restarted with TenantDNSSearch on; acme's pod
// searches its tenant's path first with ndots:6, the system pod (tp1's
// agent, run again once tp1 returned) keeps upstream's path and ndots:5.
func (l *lab) tenantDNSOn() error {
	log := l.nodeLog[len(l.nodeLog)-1]
	app, agent, err := l.sandboxDNSOf(log, [2]string{"app", "web"}, [2]string{"agent", "kube-system"})
	if err != nil {
		return err
	}
	fmt.Printf("      acme/web/app:  searches %v options %v servers %v\n", app.searches, app.options, app.servers)
	fmt.Printf("      system/kube-system/agent: searches %v options %v\n", agent.searches, agent.options)
	wantApp := []string{"web.acme.svc." + clusterDomain, "acme.svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}
	if len(app.searches) < len(wantApp) || strings.Join(app.searches[:len(wantApp)], " ") != strings.Join(wantApp, " ") {
		return fmt.Errorf("acme's pod searches %v, want %v first", app.searches, wantApp)
	}
	if !contains(app.options, "ndots:6") {
		return fmt.Errorf("acme's pod options %v, want ndots:6", app.options)
	}
	wantSys := "kube-system.svc." + clusterDomain
	if len(agent.searches) == 0 || agent.searches[0] != wantSys || !contains(agent.options, "ndots:5") {
		return fmt.Errorf("system pod searches %v options %v, want %s first and ndots:5", agent.searches, agent.options, wantSys)
	}
	return nil
}

// sandboxDNSOf waits for the sandbox DNS configuration of two pods (name,
// namespace) in a kubelet log.
func (l *lab) sandboxDNSOf(log string, a, b [2]string) (sandboxDNS, sandboxDNS, error) {
	var da, db sandboxDNS
	err := poll(30*time.Second, func() error {
		var ok1, ok2 bool
		da, ok1 = findSandboxDNS(log, a[0], a[1])
		db, ok2 = findSandboxDNS(log, b[0], b[1])
		if !ok1 || !ok2 {
			return fmt.Errorf("no PodSandboxConfig line for %s (%v) or %s (%v) in %s", a[0], ok1, b[0], ok2, log)
		}
		return nil
	})
	return da, db, err
}

// sameContextNames: the node's programs started with the TP kubeconfigs
// written as Arktos's worker script writes them (every file's context
// local-up-cluster) and named the TPs after the files; the pods of both
// TPs ran (pods-running-in-own-tp), so the names held.
func (l *lab) sameContextNames() error {
	if !arktoslab.Alive(l.node) || !arktoslab.Alive(l.proxy) {
		return fmt.Errorf("with every TP kubeconfig's context %s: hollow-node alive %v, kube-proxy alive %v", workerKubeconfigContext, arktoslab.Alive(l.node), arktoslab.Alive(l.proxy))
	}
	if l.stock {
		// Stock Arktos names no TPs (its client manager keeps indexes in
		// memory); that it runs is all there is to check.
		fmt.Printf("      stock binaries run with kubeconfigs of one context %q (they name no TPs)\n", workerKubeconfigContext)
		return nil
	}
	want := workerTPNames[0] + " " + workerTPNames[1]
	kubelet := "tenant partitions [" + want + "]"
	if !logHas(l.nodeLog[0], kubelet) {
		return fmt.Errorf("the kubelet's log has no %q (its kubeconfigs' context is %s for both TPs)", kubelet, workerKubeconfigContext)
	}
	proxy := "Tenant partitions: " + workerTPNames[0] + ", " + workerTPNames[1]
	if !logHas(l.proxyLog(), proxy) {
		return fmt.Errorf("kube-proxy's log has no %q", proxy)
	}
	fmt.Printf("      kubeconfigs with one context %q: the kubelet and kube-proxy named the TPs %s\n", workerKubeconfigContext, want)
	return nil
}

// proxyLog is the log of kube-proxy's latest start.
func (l *lab) proxyLog() string {
	return filepath.Join(l.dir, fmt.Sprintf("kube-proxy.%d.log", l.proxyStarts))
}

// logHas says whether the file at path has a line containing s.
func logHas(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte(s))
}

type sandboxDNS struct{ servers, searches, options []string }

// findSandboxDNS reads the last "PodSandboxConfig: &PodSandboxConfig{...}"
// line of pod name in namespace ns (the gogo-protobuf String() form).
func findSandboxDNS(log, name, ns string) (sandboxDNS, bool) {
	f, err := os.Open(log)
	if err != nil {
		return sandboxDNS{}, false
	}
	defer f.Close()
	var out sandboxDNS
	found := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "PodSandboxConfig: ") || !strings.Contains(line, "Metadata:&PodSandboxMetadata{Name:"+name+",") || !strings.Contains(line, "Namespace:"+ns+",") {
			continue
		}
		i := strings.Index(line, "DnsConfig:&DNSConfig{")
		if i < 0 {
			continue
		}
		dnsPart := line[i:]
		out = sandboxDNS{servers: listField(dnsPart, "Servers:"), searches: listField(dnsPart, "Searches:"), options: listField(dnsPart, "Options:")}
		found = true
	}
	return out, found
}

// listField parses "Key:[a b c]" in s.
func listField(s, key string) []string {
	i := strings.Index(s, key+"[")
	if i < 0 {
		return nil
	}
	s = s[i+len(key)+1:]
	j := strings.Index(s, "]")
	if j < 0 {
		return nil
	}
	return strings.Fields(s[:j])
}

// kubeDNSRules: kube-dns of each TP DNATs to its own TP's endpoint only.
func (l *lab) kubeDNSRules() error {
	ips := &l.kubeDNS
	for i := range l.tps {
		obj, err := l.get(i, "/api/v1/tenants/system/namespaces/kube-system/services/kube-dns")
		if err != nil {
			return err
		}
		ips[i] = arktoslab.Str(obj, "spec", "clusterIP")
	}
	if ips[0] == ips[1] {
		return fmt.Errorf("both kube-dns services have cluster IP %s; the lab needs different ones", ips[0])
	}
	for i := range l.tps {
		if err := waitDNAT(60*time.Second, fmt.Sprintf("kube-dns of tp%d", i+1), ips[i], "udp", 53, l.dnsEndpoint(i)+":53"); err != nil {
			return err
		}
	}
	fmt.Printf("      kube-dns of tp1 %s -> %s, of tp2 %s -> %s\n", ips[0], l.dnsEndpoint(0), ips[1], l.dnsEndpoint(1))
	return nil
}

// tenantServiceRules: acme's service in tp2 has its rules.
func (l *lab) tenantServiceRules() error {
	obj, err := l.get(1, "/api/v1/tenants/acme/namespaces/web/services/app")
	if err != nil {
		return err
	}
	return waitDNAT(10*time.Second, "acme/web/app", arktoslab.Str(obj, "spec", "clusterIP"), "tcp", 80, "10.244.9.9:8080")
}

// tpDownKeepsRules: with tp1's API server stopped, tp1's rules stay and a
// service created in tp2 is programmed within 2 s.
func (l *lab) tpDownKeepsRules() error {
	l.stopTP(0)
	acme := "/api/v1/tenants/acme/namespaces/web"
	svc, err := l.write(1, "POST", acme+"/services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"late"},"spec":{"ports":[{"name":"http","port":81,"protocol":"TCP"}]}}`)
	if err != nil {
		return err
	}
	if _, err := l.write(1, "POST", acme+"/endpoints", endpointsJSON("late", "http", "10.244.9.10", 8081, "TCP")); err != nil {
		return err
	}
	created := time.Now()
	ip := arktoslab.Str(svc, "spec", "clusterIP")
	if err := waitDNAT(2*time.Second, "tp2's new service acme/web/late", ip, "tcp", 81, "10.244.9.10:8081"); err != nil {
		return err
	}
	fmt.Printf("      tp2's new service programmed %v after its endpoints were written, tp1 down\n", time.Since(created).Round(time.Millisecond))
	return waitDNAT(0, "with tp1 down, tp1's kube-dns", l.kubeDNS[0], "udp", 53, l.dnsEndpoint(0)+":53")
}

// restartDeletes: the node restarts while tp1 is down; tp2's agent pod,
// deleted meanwhile, is removed from tp2 by the restarted kubelet.
func (l *lab) restartDeletes() error {
	arktoslab.Stop(l.node)
	path := podPath("system", "kube-system", "agent")
	if _, err := l.write(1, "DELETE", path, ""); err != nil {
		return err
	}
	if _, err := l.get(1, path); err != nil {
		return fmt.Errorf("tp2's agent is gone before the kubelet returned (%v); the lab needs its graceful delete to wait for the kubelet", err)
	}
	// The fake runtime's containers died with the node (a reboot); its
	// sandbox checkpoints must go too, or dockershim restores sandboxes
	// the fake docker client no longer has (and panics starting them).
	if err := os.RemoveAll(dockershimState); err != nil {
		return err
	}
	l.restartedAt = time.Now()
	// The node comes back with tenant DNS switched on (tenant-dns-on).
	l.startNode(true)
	return poll(60*time.Second, func() error {
		if _, err := l.get(1, path); err == nil {
			return fmt.Errorf("tp2's agent, deleted while the node was down, is still in tp2 60s after the node restarted")
		} else if !arktoslab.IsNotFound(err) {
			return err
		}
		return nil
	})
}

// proxyStartsWithTPDown: kube-proxy restarted, with empty rules, while
// tp1's API server is down programs tp2's services (the patched one after
// its TP sync timeout: a TP that never answers must not hold back the
// others), and tp1's from the state the previous kube-proxy saved
// (--tenant-partition-state-dir): tp1's kube-dns DNATs to its endpoint
// although tp1 has not answered since the restart.
func (l *lab) proxyStartsWithTPDown() error {
	arktoslab.Stop(l.proxy)
	// A stopped kube-proxy leaves its rules; the node restarts without them
	// (the namespace's own nat table), so what follows is the new one's.
	for _, args := range [][]string{{"-t", "nat", "-F"}, {"-t", "nat", "-X"}} {
		if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables %v: %v: %s", args, err, out)
		}
	}
	if rules, err := arktoslab.NATRules(); err != nil || len(rules.DNAT(l.kubeDNS[1], "udp", 53)) != 0 {
		return fmt.Errorf("the nat table still has tp2's kube-dns after flushing it (%v)", err)
	}
	start := time.Now()
	l.startProxy()
	if err := waitDNAT(proxySyncTimeout+20*time.Second, "kube-proxy restarted with tp1 down: tp2's kube-dns", l.kubeDNS[1], "udp", 53, l.dnsEndpoint(1)+":53"); err != nil {
		return err
	}
	fmt.Printf("      kube-proxy restarted with tp1 down programmed tp2 after %v\n", time.Since(start).Round(100*time.Millisecond))
	if err := waitDNAT(proxySyncTimeout+10*time.Second, "kube-proxy restarted with tp1 down: tp1's kube-dns from its saved state", l.kubeDNS[0], "udp", 53, l.dnsEndpoint(0)+":53"); err != nil {
		return err
	}
	fmt.Printf("      and tp1's kube-dns from its saved state after %v\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// metricsServed: the kubelet's and kube-proxy's /metrics serve tpkit's
// per-TP series, labelled by TP name (tp1, tp2), with the lab's figures:
// the kubelet's origins per TP are the node's pods per TP, its origin file
// has a size and its flushes a latency; kube-proxy has synced both TPs and
// holds as many services and endpoints of each as the TP has.
func (l *lab) metricsServed() error {
	kubeletPort, err := argValue(l.node, "--kubelet-port")
	if err != nil {
		return err
	}
	proxyPort, err := argValue(l.proxy, "--metrics-port")
	if err != nil {
		return err
	}
	want := map[string]float64{}
	for _, p := range pods {
		want[fmt.Sprintf(`tpkit_tporigin_entries{kind="pods",partition=%q}`, workerTPNames[p.tp])]++
	}
	// hollow-node's kubelet serves plain HTTP without authentication
	// (pkg/kubemark/hollow_kubelet.go gives it no TLS options or auth).
	kubeletURL := "http://127.0.0.1:" + kubeletPort + "/metrics"
	var got map[string]float64
	err = poll(15*time.Second, func() error {
		if got, err = scrape(kubeletURL); err != nil {
			return err
		}
		if d := differences(got, want); d != "" {
			return fmt.Errorf("kubelet %s: %s", kubeletURL, d)
		}
		if got["tpkit_tporigin_file_bytes"] <= 0 || got["tpkit_tporigin_commit_duration_seconds_count"] <= 0 {
			return fmt.Errorf("kubelet %s: tpkit_tporigin_file_bytes %v, tpkit_tporigin_commit_duration_seconds_count %v; want both > 0",
				kubeletURL, got["tpkit_tporigin_file_bytes"], got["tpkit_tporigin_commit_duration_seconds_count"])
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("      kubelet: origins tp1 %v, tp2 %v; origin file %v bytes; %v flushes taking %.4fs in all\n",
		got[fmt.Sprintf(`tpkit_tporigin_entries{kind="pods",partition=%q}`, workerTPNames[0])],
		got[fmt.Sprintf(`tpkit_tporigin_entries{kind="pods",partition=%q}`, workerTPNames[1])],
		got["tpkit_tporigin_file_bytes"], got["tpkit_tporigin_commit_duration_seconds_count"], got["tpkit_tporigin_commit_duration_seconds_sum"])

	proxyURL := "http://127.0.0.1:" + proxyPort + "/metrics"
	return poll(15*time.Second, func() error {
		want := map[string]float64{}
		for i := range l.tps {
			tp := fmt.Sprintf(`{partition=%q}`, workerTPNames[i])
			for _, kind := range []string{"services", "endpoints"} {
				n, err := l.count(i, "/api/v1/tenants/all/"+kind)
				if err != nil {
					return err
				}
				want["tpkit_kubeproxy_"+kind+tp] = float64(n)
			}
			want["tpkit_kubeproxy_partition_synced"+tp] = 1
			want["tpkit_kubeproxy_partition_sync_timed_out"+tp] = 0
		}
		got, err := scrape(proxyURL)
		if err != nil {
			return err
		}
		if d := differences(got, want); d != "" {
			return fmt.Errorf("kube-proxy %s: %s", proxyURL, d)
		}
		fmt.Printf("      kube-proxy: services tp1 %v, tp2 %v; endpoints tp1 %v, tp2 %v; both synced\n",
			got[fmt.Sprintf(`tpkit_kubeproxy_services{partition=%q}`, workerTPNames[0])], got[fmt.Sprintf(`tpkit_kubeproxy_services{partition=%q}`, workerTPNames[1])],
			got[fmt.Sprintf(`tpkit_kubeproxy_endpoints{partition=%q}`, workerTPNames[0])], got[fmt.Sprintf(`tpkit_kubeproxy_endpoints{partition=%q}`, workerTPNames[1])])
		return nil
	})
}

// argValue is the value of flag (--name=value) on cmd's command line.
func argValue(cmd *exec.Cmd, flag string) (string, error) {
	if cmd != nil {
		for _, a := range cmd.Args {
			if strings.HasPrefix(a, flag+"=") {
				return a[len(flag)+1:], nil
			}
		}
	}
	return "", fmt.Errorf("no %s on the command line", flag)
}

// scrape reads a Prometheus text exposition: series (name{labels} as
// printed) -> value.
func scrape(url string) (map[string]float64, error) {
	resp, err := arktoslab.HTTPClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// differences lists the series of want that got lacks or has with another
// value; "" when none.
func differences(got, want map[string]float64) string {
	var d []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			d = append(d, k+" missing")
		} else if g != v {
			d = append(d, fmt.Sprintf("%s = %v, want %v", k, g, v))
		}
	}
	sort.Strings(d)
	return strings.Join(d, "; ")
}

// count is the number of items a list in TP i has.
func (l *lab) count(i int, path string) (int, error) {
	obj, err := l.get(i, path)
	if err != nil {
		return 0, err
	}
	items, _ := obj["items"].([]any)
	return len(items), nil
}

// noCrossTPRedirect: Arktos's API server config manager (client-go
// datapartition) watches one TP's "kubernetes" Endpoints and, on a change,
// gives every client config in the process (apiserverupdate's process-wide
// broadcast) that TP's API servers. Each TP's "kubernetes" Endpoints is
// pointed at the other TP's API server (through a forwarder on the lab's
// address that counts its connections: Endpoints may not hold a loopback
// address), so whichever TP a manager watches, an update would send every
// kube-proxy client to the other TP. kube-proxy must keep its own TPs: no
// connection reaches either forwarder, a service created afterwards in each
// TP is programmed with its own endpoint, and no client was reset.
func (l *lab) noCrossTPRedirect() error {
	if !arktoslab.Alive(l.proxy) {
		return fmt.Errorf("kube-proxy is not running")
	}
	// A manager applies no update until 30 s after it first read its
	// Endpoints (datapartition's startUpResetDelayInSeconds; it logs the
	// time), which may be long after kube-proxy's start (Arktos's waits for
	// TP 0); without one, 35 s after kube-proxy's start.
	log := filepath.Join(l.dir, fmt.Sprintf("kube-proxy.%d.log", l.proxyStarts))
	until, ok := managerFirstUpdate(log)
	if !ok {
		if started, ok := klogStart(log); ok {
			until = started.Add(35 * time.Second)
		}
	}
	if wait := time.Until(until.Add(2 * time.Second)); wait > 0 {
		fmt.Printf("      waiting %v for the end of the API server config manager's start-up delay\n", wait.Round(time.Second))
		time.Sleep(wait)
	}
	const path = "/api/v1/tenants/system/namespaces/default/endpoints/kubernetes"
	var saved [2]map[string]any
	for i := range l.tps {
		ep, err := l.get(i, path)
		if err != nil {
			return err
		}
		saved[i] = ep
	}
	defer func() {
		for i := range l.tps { // best effort: the API servers' reconciler rewrites them too
			cur, err := l.get(i, path)
			if err != nil {
				continue
			}
			saved[i]["metadata"].(map[string]any)["resourceVersion"] = arktoslab.Str(cur, "metadata", "resourceVersion")
			b, _ := json.Marshal(saved[i])
			_, _ = l.write(i, "PUT", path, string(b))
		}
	}()
	if os.Getenv("ADVERTISE") == "" {
		return fmt.Errorf("no ADVERTISE address for the forwarders (run.sh sets it)")
	}
	var fwd [2]*arktoslab.Forwarder
	for i := range l.tps {
		other := strings.TrimPrefix(l.tps[1-i], "http://")
		f, err := arktoslab.Forward(os.Getenv("ADVERTISE"), other)
		if err != nil {
			return err
		}
		defer f.Close()
		fwd[i] = f
	}
	for i := range l.tps {
		port := fwd[i].Port()
		ep := saved[i]
		group := ""
		if subsets, _ := ep["subsets"].([]any); len(subsets) > 0 {
			if m, ok := subsets[0].(map[string]any); ok {
				group, _ = m["serviceGroupId"].(string)
			}
		}
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"kubernetes","resourceVersion":%q},`+
			`"subsets":[{"serviceGroupId":%q,"addresses":[{"ip":%q}],"ports":[{"name":"http","port":%d,"protocol":"TCP"}]}]}`,
			arktoslab.Str(ep, "metadata", "resourceVersion"), group, os.Getenv("ADVERTISE"), port)
		if _, err := l.write(i, "PUT", path, body); err != nil {
			return fmt.Errorf("pointing tp%d's kubernetes Endpoints at tp%d: %v", i+1, 2-i, err)
		}
	}
	fmt.Printf("      tp1's kubernetes Endpoints point at tp2's API server (%s via %s:%d) and tp2's at tp1's (%s via %s:%d)\n",
		l.tps[1], os.Getenv("ADVERTISE"), fwd[0].Port(), l.tps[0], os.Getenv("ADVERTISE"), fwd[1].Port())
	time.Sleep(5 * time.Second) // a manager's update is applied at once after its first 30 s
	for i := range l.tps {
		sys := "/api/v1/tenants/system/namespaces/default"
		// Its own port in each TP: the two TPs may give it the same cluster IP.
		port := 82 + i
		svc, err := l.write(i, "POST", sys+"/services", fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"probe"},"spec":{"ports":[{"name":"p","port":%d,"protocol":"TCP"}]}}`, port))
		if err != nil {
			return err
		}
		ip := fmt.Sprintf("10.244.%d.82", i+1)
		if _, err := l.write(i, "POST", sys+"/endpoints", endpointsJSON("probe", "p", ip, 8082, "TCP")); err != nil {
			return err
		}
		if err := waitDNAT(15*time.Second, fmt.Sprintf("tp%d's new service default/probe", i+1), arktoslab.Str(svc, "spec", "clusterIP"), "tcp", port, ip+":8082"); err != nil {
			return err
		}
	}
	for i := range fwd {
		if n := fwd[i].Conns(); n > 0 {
			return fmt.Errorf("%d connections reached tp%d's API server through tp%d's kubernetes Endpoints", n, 2-i, i+1)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		return err
	}
	if i := bytes.Index(b, []byte("Reset restClients")); i >= 0 {
		line := string(b[bytes.LastIndexByte(b[:i], '\n')+1:])
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		return fmt.Errorf("kube-proxy reset its clients to another API server: %s", line)
	}
	fmt.Printf("      no connection reached another TP; services created in each TP afterwards are programmed with their own endpoints; no client was reset\n")
	return nil
}

// managerFirstUpdate is the last time before which datapartition's manager
// applies no update, as log says ("Set first update api server to time
// <time.Time.String()> m=+..."); false when no manager started.
func managerFirstUpdate(log string) (time.Time, bool) {
	b, err := os.ReadFile(log)
	if err != nil {
		return time.Time{}, false
	}
	const marker = "Set first update api server to time "
	var last time.Time
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.Index(line, marker)
		if i < 0 {
			continue
		}
		v := line[i+len(marker):]
		if j := strings.Index(v, " m="); j >= 0 {
			v = v[:j]
		}
		if ts, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", v); err == nil && ts.After(last) {
			last = ts
		}
	}
	return last, !last.IsZero()
}

// klogStart is the time of the first klog line of log (Lmmdd hh:mm:ss.uuuuuu),
// taken as today's, in UTC as the lab's programs log.
func klogStart(log string) (time.Time, bool) {
	f, err := os.Open(log)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 21 || !strings.ContainsRune("IWEF", rune(line[0])) {
			continue
		}
		ts, err := time.Parse("0102 15:04:05.000000", line[1:21])
		if err != nil {
			continue
		}
		now := time.Now().UTC()
		return time.Date(now.Year(), ts.Month(), ts.Day(), ts.Hour(), ts.Minute(), ts.Second(), ts.Nanosecond(), time.UTC), true
	}
	return time.Time{}, false
}

// tpReturns: tp1's API server starts again; the restarted kubelet runs its
// pod again and tp1 gets the pod's new status, and kube-proxy programs tp1's
// services again.
func (l *lab) tpReturns() error {
	l.startTP(0)
	path := podPath("system", "kube-system", "agent")
	err := poll(90*time.Second, func() error {
		obj, err := l.get(0, path)
		if err != nil {
			return err
		}
		started := runningSince(obj)
		if started.IsZero() || started.Before(l.restartedAt.Truncate(time.Second)) {
			return fmt.Errorf("tp1's agent: container running since %v, want a start after the node's restart at %v", started, l.restartedAt.Truncate(time.Second))
		}
		fmt.Printf("      tp1's agent status updated again: running since %v (node restarted %v)\n", started, l.restartedAt.Round(time.Second))
		return nil
	})
	if err != nil {
		return err
	}
	// kube-proxy, restarted while tp1 was down, programs tp1 once it answers.
	return waitDNAT(30*time.Second, "tp1 is back: its kube-dns", l.kubeDNS[0], "udp", 53, l.dnsEndpoint(0)+":53")
}

// noDefaultTP0: no kubelet log says a pod's client defaulted to TP 0.
func (l *lab) noDefaultTP0() error {
	n := 0
	var first string
	for _, log := range l.nodeLog {
		b, err := os.ReadFile(log)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, defaultedToTP0) {
				if n == 0 {
					first = line
				}
				n++
			}
		}
	}
	if n > 0 {
		return fmt.Errorf("%d kubelet log lines say %q, the first: %s", n, defaultedToTP0, first)
	}
	return nil
}

// daemonSetAdmission: the API server's SystemDaemonSet plugin refuses a
// DaemonSet in a regular tenant with Arktos's own message and admits it in
// the system tenant.
func (l *lab) daemonSetAdmission() error {
	ds := `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds"},"spec":{"selector":{"matchLabels":{"app":"ds"}},"template":{"metadata":{"labels":{"app":"ds"}},"spec":{"containers":[{"name":"c","image":"pause"}]}}}}`
	want := `daemonsets.apps "ds" is forbidden: only system tenant is allowed to have DaemonSet`
	_, err := l.write(1, "POST", "/apis/apps/v1/tenants/acme/namespaces/web/daemonsets", ds)
	if err == nil || !strings.Contains(err.Error(), want) {
		return fmt.Errorf("a DaemonSet in tenant acme: got %v, want %q", err, want)
	}
	if _, err := l.write(1, "POST", "/apis/apps/v1/tenants/system/namespaces/default/daemonsets", ds); err != nil {
		return fmt.Errorf("a DaemonSet in the system tenant: %v", err)
	}
	return nil
}

// stopTP and startTP stop TP i's API server (its etcd keeps running) and
// start it again with the same command line, so on the same port and data.
func (l *lab) stopTP(i int) {
	_ = syscall.Kill(l.tpPID[i], syscall.SIGKILL)
	for j := 0; j < 100 && syscall.Kill(l.tpPID[i], 0) == nil; j++ {
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("== tp%d's API server stopped\n", i+1)
}

func (l *lab) startTP(i int) {
	log := filepath.Join(l.dir, fmt.Sprintf("tp%d-apiserver.again.log", i+1))
	f, err := os.Create(log)
	if err != nil {
		l.t.Fatal(err)
	}
	cmd := exec.Command(l.tpArgs[i][0], l.tpArgs[i][1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		l.t.Fatalf("starting tp%d's API server again: %v", i+1, err)
	}
	go func() { _ = cmd.Wait(); f.Close() }()
	l.tpPID[i] = cmd.Process.Pid
	if err := poll(60*time.Second, func() error { _, err := l.get(i, "/healthz"); return err }); err != nil {
		l.t.Fatalf("tp%d's API server did not come back: %v", i+1, err)
	}
	fmt.Printf("== tp%d's API server started again (pid %d)\n", i+1, cmd.Process.Pid)
}

// teardown stops the node's programs and the API servers, and removes the
// hollow kubelet's folders (after unmounting what it mounted there).
func (l *lab) teardown() {
	arktoslab.Stop(l.proxy)
	arktoslab.Stop(l.node)
	for i := range l.tpPID {
		_ = syscall.Kill(l.tpPID[i], syscall.SIGKILL)
	}
	for _, d := range []string{"rp", "tps"} {
		for _, pid := range testbin.LabPIDs(filepath.Join(l.dir, d, "pids")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := arktoslab.RemoveHollowRoots(l.tmpBefore); err != nil {
		l.t.Log(err)
	}
	if l.t.Failed() || os.Getenv("KEEP_LOGS") != "" {
		keep := filepath.Join(os.TempDir(), fmt.Sprintf("tpkit-node-lab.%d", os.Getpid()))
		if err := exec.Command("cp", "-r", l.dir, keep).Run(); err == nil {
			fmt.Printf("== logs kept in %s\n", keep)
		}
	}
}

// dockershimState is where hollow-node's dockershim keeps its sandbox
// checkpoints: on the lab's own tmpfs (run.sh).
const dockershimState = "/var/lib/dockershim"

// waitDNAT polls the nat table for up to d (0: one look) until ip:port/proto
// DNATs to want alone; the error names what (the service) and what it saw.
func waitDNAT(d time.Duration, what, ip, proto string, port int, want string) error {
	start := time.Now()
	return poll(d, func() error {
		rules, err := arktoslab.NATRules()
		if err != nil {
			return err
		}
		if got := rules.DNAT(ip, proto, port); strings.Join(got, ",") != want {
			return fmt.Errorf("%s (%s:%d/%s) DNATs to %v after %v, want [%s]", what, ip, port, proto, got, time.Since(start).Round(time.Millisecond), want)
		}
		return nil
	})
}

// The TPs' REST API: plain JSON over the insecure port.

func (l *lab) get(i int, path string) (map[string]any, error) { return l.write(i, "GET", path, "") }

func (l *lab) write(i int, method, path, body string) (map[string]any, error) {
	obj := map[string]any{}
	var out any = &obj
	if path == "/healthz" {
		out = nil
	}
	if err := arktoslab.Request(method, l.tps[i]+path, body, out); err != nil {
		if _, ok := err.(*arktoslab.APIError); ok {
			return nil, err
		}
		return nil, fmt.Errorf("tp%d %s %s: %v", i+1, method, path, err)
	}
	return obj, nil
}

func (l *lab) mustWrite(i int, method, path, body string) map[string]any {
	obj, err := l.write(i, method, path, body)
	if err != nil {
		l.t.Fatalf("seeding tp%d: %s %s: %v", i+1, method, path, err)
	}
	return obj
}

func podPath(tenant, ns, name string) string {
	return "/api/v1/tenants/" + tenant + "/namespaces/" + ns + "/pods/" + name
}

func podJSON(name, dnsPolicy string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"nodeName":%q,"dnsPolicy":%q,`+
		`"containers":[{"name":"c","image":"k8s.gcr.io/pause:3.2","volumeMounts":[{"name":"creds","mountPath":"/creds"}]}],`+
		`"volumes":[{"name":"creds","secret":{"secretName":"creds"}}]}}`, name, nodeName, dnsPolicy)
}

func secretJSON(name, value string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q},"data":{%q:%q}}`, name, secretKey, base64.StdEncoding.EncodeToString([]byte(value)))
}

func endpointsJSON(name, portName, ip string, port int, proto string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":%q},"subsets":[{"addresses":[{"ip":%q}],"ports":[{"name":%q,"port":%d,"protocol":%q}]}]}`, name, ip, portName, port, proto)
}

// runningSince is the start time of the pod's first running container.
func runningSince(obj map[string]any) time.Time {
	st, _ := obj["status"].(map[string]any)
	cs, _ := st["containerStatuses"].([]any)
	for _, c := range cs {
		m, _ := c.(map[string]any)
		if s := arktoslab.Str(m, "state", "running", "startedAt"); s != "" {
			if ts, err := time.Parse(time.RFC3339, s); err == nil {
				return ts
			}
		}
	}
	return time.Time{}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// poll retries fn every 100 ms until it succeeds or d has passed, and
// returns its last error.
func poll(d time.Duration, fn func() error) error { return testbin.Poll(d, 100*time.Millisecond, fn) }

func freePort(t *testing.T) int {
	p, err := arktoslab.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readTrim(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// eventsInOwnTP: the kubelet's events about each pod are in the pod's own
// TP (acme's app in tp2's acme/web; each TP's system agent in that TP's
// kube-system, and not the other TP's), and none of them in the resource
// partition.
func (l *lab) eventsInOwnTP() error {
	uids := map[string]string{} // pod UID -> "tenant/ns/name of tpN"
	for _, p := range pods {
		obj, err := l.get(p.tp, podPath(p.tenant, p.namespace, p.name))
		if err != nil {
			return err
		}
		uids[arktoslab.Str(obj, "metadata", "uid")] = fmt.Sprintf("%s/%s/%s of tp%d", p.tenant, p.namespace, p.name, p.tp+1)
	}
	var summary []string
	err := poll(60*time.Second, func() error {
		summary = summary[:0]
		for _, p := range pods {
			evs, err := l.events(l.tps[p.tp], "/api/v1/tenants/"+p.tenant+"/namespaces/"+p.namespace+"/events")
			if err != nil {
				return err
			}
			own, foreign := 0, []string{}
			for _, e := range evs {
				if e.name != p.name {
					continue
				}
				if uids[e.uid] == fmt.Sprintf("%s/%s/%s of tp%d", p.tenant, p.namespace, p.name, p.tp+1) {
					own++
				} else if w, ok := uids[e.uid]; ok {
					foreign = append(foreign, e.reason+" about "+w)
				}
			}
			if len(foreign) > 0 {
				return fmt.Errorf("tp%d has events about another TP's pod: %v", p.tp+1, foreign)
			}
			if own == 0 {
				return fmt.Errorf("no event about %s/%s/%s in tp%d (%d events in %s/%s there)", p.tenant, p.namespace, p.name, p.tp+1, len(evs), p.tenant, p.namespace)
			}
			summary = append(summary, fmt.Sprintf("%s/%s/%s: %d in tp%d", p.tenant, p.namespace, p.name, own, p.tp+1))
		}
		return nil
	})
	if err != nil {
		return err
	}
	evs, err := l.events(l.rp, "/api/v1/tenants/all/events")
	if err != nil {
		return err
	}
	node := 0
	for _, e := range evs {
		if w, ok := uids[e.uid]; ok {
			return fmt.Errorf("the resource partition has an event (%s) about %s", e.reason, w)
		}
		if e.kind == "Node" {
			node++
		}
	}
	fmt.Printf("      pods' events: %s; the resource partition has %d node events and none about the pods\n", strings.Join(summary, ", "), node)
	return nil
}

type labEvent struct{ kind, name, uid, reason string }

// events lists the events at path of the API server at base.
func (l *lab) events(base, path string) ([]labEvent, error) {
	var list struct {
		Items []struct {
			Reason         string
			InvolvedObject struct{ Kind, Name, UID string }
		}
	}
	if err := arktoslab.Request("GET", base+path, "", &list); err != nil {
		if _, ok := err.(*arktoslab.APIError); ok {
			return nil, err
		}
		return nil, fmt.Errorf("GET %s%s: %v", base, path, err)
	}
	var out []labEvent
	for _, it := range list.Items {
		out = append(out, labEvent{it.InvolvedObject.Kind, it.InvolvedObject.Name, it.InvolvedObject.UID, it.Reason})
	}
	return out, nil
}

// authzAsksPodTP: the kubelet's API, with webhook authorization, asks the
// pod's own TP whether a request about a pod is allowed. tp1's API server
// restarts with RBAC, so its subject access reviews deny the anonymous
// caller, while tp2's (AlwaysAllow) allow everything; the node restarts
// with --kubelet-authorization-mode=Webhook. Then a request about tp2's
// pod is let through and requests about tp1's pod, and node-scoped ones
// (TP 0, tp1), are refused. Asking TP 0 for everything refuses them all.
func (l *lab) authzAsksPodTP() error {
	if l.stock {
		return fmt.Errorf("stock hollow-node has no --kubelet-authorization-mode")
	}
	agent1, err := l.get(0, podPath("system", "kube-system", "agent"))
	if err != nil {
		return err
	}
	agent1UID := arktoslab.Str(agent1, "metadata", "uid")
	// tp1's API server with RBAC: the other checks are done, and every
	// client of the lab uses the insecure port, which RBAC does not guard.
	rbac := append([]string{}, l.tpArgs[0]...)
	for i, a := range rbac {
		if a == "--authorization-mode=AlwaysAllow" {
			rbac[i] = "--authorization-mode=RBAC"
		}
	}
	saved := l.tpArgs[0]
	l.tpArgs[0] = rbac
	l.stopTP(0)
	l.startTP(0)
	l.tpArgs[0] = saved

	arktoslab.Stop(l.node)
	if err := os.RemoveAll(dockershimState); err != nil {
		return err
	}
	port := l.startNode(false, "--kubelet-authorization-mode=Webhook")
	log := l.nodeLog[len(l.nodeLog)-1]
	kubelet := func(path string) (int, string, error) {
		resp, err := arktoslab.HTTPClient.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b)), nil
	}
	// The restarted kubelet knows the pods once their sources delivered
	// them: acme's app is then served (or refused) by its name.
	app := "/containerLogs/acme/web/app/c"
	var code int
	var body string
	err = poll(60*time.Second, func() error {
		if !arktoslab.Alive(l.node) {
			return fmt.Errorf("hollow-node exited:\n%s", arktoslab.Tail(log, 30))
		}
		code, body, err = kubelet(app)
		if err != nil {
			return err
		}
		if code == http.StatusForbidden || code == http.StatusUnauthorized {
			return fmt.Errorf("GET %s: HTTP %d %s, want it let through by tp2", app, code, body)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("      GET %s (tp2's pod): HTTP %d %q, let through\n", app, code, body)
	for _, path := range []string{"/portForward/system/kube-system/agent/" + agent1UID, "/pods"} {
		code, body, err := kubelet(path)
		if err != nil {
			return err
		}
		if code != http.StatusForbidden {
			return fmt.Errorf("GET %s (tp1 decides): HTTP %d %s, want 403 from tp1's RBAC", path, code, body)
		}
		fmt.Printf("      GET %s (tp1 decides): HTTP %d %s\n", path, code, body)
	}
	return nil
}

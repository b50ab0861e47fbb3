//go:build arktoscluster

package arktoscluster

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/testbed/arktoslab"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// The cluster's fixed values (hack/cluster.sh). The lab runs in node 1's
// namespaces, so 127.0.0.1 is node 1's, and the API servers are at the
// bridge's address.
const (
	clusterDomain = "cluster.local"
	// clusterDNS is the partition-dns Service's cluster IP: deploy's
	// README step 3, "give the Service the IP your clusters already use",
	// here the first of tp1's service range (arktos-lab.sh gives tpN
	// 10.(95+N).0.0/16), every kubelet's --cluster-dns.
	clusterDNS = "10.96.0.10"
	// node is the node the lab runs on and pins its pods to; nodeIP is its
	// address on the cluster's bridge, where its kubelet serves.
	node, nodeIP = "tpkit-node1", "10.254.0.11"
)

type lab struct {
	t                    *testing.T
	bin, dir, clusterDir string // ARKTOS_BIN, the lab's scratch folder, CLUSTER_DIR
	dnsImage, pause      string
	images, root         string // the image archives' folder, the checkout
	gitStatus            string // the checkout's git status before the lab
	rpKC                 string
	tpKC, tpURL          []string // the TPs' kubeconfigs and URLs, as the node reaches them
	dockerSock, caDir    string   // node 1's dockerd; the TPs' client CAs and certificates
	checks               arktoslab.Checks
	systemStart          func() error // system-pod-first-lookups, from system-pod-resolves-own-tp's pod
	notrackOn            int          // NOTRACK rules for the cluster DNS IP with the node cache's switch on
	tcpAnswer            string       // service-tcp-through-proxy, from tenant-pod-resolves's pod
}

// check runs one named check, prints its verdict and returns its error.
func (l *lab) check(name string, fn func() error) error { return l.checks.Run(name, fn) }

func TestArktosCluster(t *testing.T) {
	dir := os.Getenv("CLUSTER_DIR")
	if dir == "" {
		t.Fatal("CLUSTER_DIR is not set: run the lab with run.sh (make check-arktos-cluster)")
	}
	l := &lab{t: t, clusterDir: dir, checks: arktoslab.Checks{Width: 28}}
	l.attach()
	l.gitStatus = strings.TrimSpace(os.Getenv("GIT_STATUS_BEFORE")) // as gitStatus gives it
	l.check("node-ready", l.nodeReady)
	// The kubelet's API per TP (kubeletapi_test.go).
	l.check("kubelet-api-twins", l.kubeletAPITwins)
	l.check("kubelet-api-tenant-pod", l.kubeletAPITenantPod)
	l.check("kubelet-api-credentials", l.kubeletAPICredentials)
	l.check("kubelet-api-mirror-lookalike", l.kubeletAPIMirrorLookalike)
	l.check("kubelet-api-twin-deleted", l.kubeletAPITwinDeleted)
	if l.check("partition-dns-ready", l.partitionDNSDeployed) == nil {
		l.seed()
		l.check("tenant-pod-resolves", l.tenantPodResolves)
		l.check("service-tcp-through-proxy", l.serviceTCP)
		l.check("system-pod-resolves-own-tp", l.systemPodResolvesOwnTP)
		l.check("system-pod-first-lookups", l.systemPodFirstLookups)
		if l.check("nodelocal-ready", l.nodeLocalReady) == nil {
			l.check("tenant-through-node-cache", l.tenantThroughNodeCache)
			l.check("system-through-node-cache", l.systemThroughNodeCache)
			l.check("node-cache-killed", l.nodeCacheKilled)
			l.check("deploy-overlay-clean", l.deployOverlayClean)
		}
		l.check("daemonset-refused-in-tenant", l.daemonSetRefused)
		l.check("kubelet-restart", l.kubeletRestart)
	}

	fmt.Println(l.checks.Summary())
	if len(l.checks.Failed()) > 0 {
		t.Fail()
	}
}

// attach reads what the lab needs of the cluster that make cluster-up
// (hack/cluster.sh) started: its state (the binaries, the images), the
// kubeconfigs with which its nodes reach the partitions, node 1's dockerd
// and the TPs' client CAs.
func (l *lab) attach() {
	b, err := os.ReadFile(filepath.Join(l.clusterDir, "state"))
	if err != nil {
		l.t.Fatalf("no cluster is up: %v", err)
	}
	state := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			state[k] = v
		}
	}
	l.bin, l.images = state["bin"], state["images"]
	l.dnsImage, l.pause = state["partition_dns_image"], state["pause_image"]
	if l.bin == "" || l.dnsImage == "" || l.pause == "" {
		l.t.Fatalf("%s/state lacks bin, partition_dns_image or pause_image:\n%s", l.clusterDir, b)
	}
	if l.root, err = testbin.ModuleRoot(); err != nil {
		l.t.Fatal(err)
	}
	l.dir = filepath.Join(l.clusterDir, "lab")
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		l.t.Fatal(err)
	}
	kc := filepath.Join(l.clusterDir, "node-kc")
	l.rpKC = filepath.Join(kc, "rp.kubeconfig")
	for i := 1; i <= 2; i++ {
		path := filepath.Join(kc, fmt.Sprintf("tp%d.kubeconfig", i))
		l.tpKC = append(l.tpKC, path)
		l.tpURL = append(l.tpURL, kubeconfigServer(l.t, path))
	}
	l.dockerSock = filepath.Join(l.clusterDir, node, "docker.sock")
	l.caDir = filepath.Join(l.clusterDir, "ca")
}

// kubeconfigServer is the server of the kubeconfig at path (cluster.sh
// writes one cluster, as server: "URL").
func kubeconfigServer(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`server: "([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s names no server", path)
	}
	return strings.TrimSuffix(string(m[1]), "/")
}

// nodeReady: the node is registered in the resource partition and Ready.
func (l *lab) nodeReady() error {
	return testbin.Poll(90*time.Second, 200*time.Millisecond, func() error {
		out, err := l.kubectl(l.rpKC, "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
		if err != nil {
			return err
		}
		if out != "True" {
			return fmt.Errorf("node %s Ready=%q", node, out)
		}
		return nil
	})
}

// kubectl runs Debian's kubectl against a kubeconfig, with its cache in the
// lab's folder.
func (l *lab) kubectl(kc string, args ...string) (string, error) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig=" + kc, "--cache-dir=" + filepath.Join(l.dir, "kcache")}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// partitionDNSDeployed: partition-dns, which cluster-up deployed as
// README.md's "Deploy on Arktos" asks of an admin (the RBAC in every TP, the
// TPs' kubeconfigs as the Secret, an overlay written by
// hack/deploy-overlay.sh outside the checkout, kubectl apply -k in tp1's
// system tenant), runs: the Deployment's two pods, placed by tp1's
// scheduler on the resource partition's nodes, are ready by their own
// probes.
func (l *lab) partitionDNSDeployed() error {
	if err := l.partitionDNSReady(90*time.Second, time.Time{}); err != nil {
		return err
	}
	pods, err := l.kubectl(l.tpKC[0], "-n", "kube-system", "get", "pods", "-l", "app.kubernetes.io/name=partition-dns", "-o", `jsonpath={range .items[*]}{.metadata.name} on {.spec.nodeName}, {end}`)
	if err != nil {
		return err
	}
	fmt.Printf("      partition-dns: 2 pods ready (%s)\n", strings.TrimSuffix(pods, ","))
	return nil
}

// partitionDNSReady waits until partition-dns's two pods in tp1 run on the
// cluster's nodes and are ready by their own probes, and the one on the
// lab's node became ready at since or later (the zero time: whenever).
func (l *lab) partitionDNSReady(d time.Duration, since time.Time) error {
	return testbin.Poll(d, 500*time.Millisecond, func() error {
		out, err := l.kubectl(l.tpKC[0], "-n", "kube-system", "get", "pods", "-l", "app.kubernetes.io/name=partition-dns",
			"-o", `jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastTransitionTime}{"\n"}{end}`)
		if err != nil {
			return err
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if out == "" || len(lines) < 2 {
			return fmt.Errorf("partition-dns pods: %q", out)
		}
		for _, line := range lines {
			f := strings.Fields(line)
			if len(f) != 5 || f[2] != "Running" || f[3] != "True" {
				return fmt.Errorf("partition-dns pod not running and ready: %q", line)
			}
			if f[1] != node {
				continue // the other node's kubelet did not restart
			}
			if t, err := time.Parse(time.RFC3339, f[4]); err != nil || t.Before(since.Truncate(time.Second)) {
				return fmt.Errorf("partition-dns pod %s: ready since %s, not again after %s", f[0], f[4], since.UTC().Format(time.RFC3339))
			}
		}
		return nil
	})
}

// seed makes the names the pods look up: tenant acme in tp2 and tenant
// beta in tp1, each with a Service app in namespace web (the same name in
// both), and a kube-dns Service in each TP's system tenant.
func (l *lab) seed() {
	l.mustWrite(1, "POST", "/api/v1/tenants", `{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"acme"},"spec":{"storageClusterId":"0"}}`)
	l.mustWrite(0, "POST", "/api/v1/tenants", `{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"beta"},"spec":{"storageClusterId":"0"}}`)
	for _, p := range []struct {
		tp     int
		tenant string
	}{{1, "acme"}, {0, "beta"}} {
		l.mustWrite(p.tp, "POST", "/api/v1/tenants/"+p.tenant+"/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"web"}}`)
		l.mustWrite(p.tp, "POST", "/api/v1/tenants/"+p.tenant+"/namespaces/web/services",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"app"},"spec":{"ports":[{"name":"http","port":80,"protocol":"TCP"}]}}`)
	}
	for i := range l.tpURL {
		l.mustWrite(i, "POST", "/api/v1/tenants/system/namespaces/kube-system/services",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"kube-dns"},"spec":{"ports":[{"name":"dns","port":53,"protocol":"UDP"}]}}`)
	}
}

func (l *lab) mustWrite(i int, method, path, body string) map[string]interface{} {
	obj := map[string]interface{}{}
	if err := arktoslab.Request(method, l.tpURL[i]+path, body, &obj); err != nil {
		l.t.Fatalf("tp%d %s %s: %v", i+1, method, path, err)
	}
	return obj
}

func (l *lab) get(i int, path string) (map[string]interface{}, error) {
	obj := map[string]interface{}{}
	return obj, arktoslab.Request("GET", l.tpURL[i]+path, "", &obj)
}

// ips is the cluster IP of Service ns/name of tenant a in TP i, which a
// pod must get, and that of tenant b's Service of the same name in TP j,
// which it must not.
func (l *lab) ips(i int, a string, j int, b, ns, name string) (own, other string, err error) {
	if own, err = l.serviceIP(i, a, ns, name); err != nil {
		return "", "", err
	}
	other, err = l.serviceIP(j, b, ns, name)
	return own, other, err
}

func (l *lab) serviceIP(i int, tenant, ns, name string) (string, error) {
	obj, err := l.get(i, "/api/v1/tenants/"+tenant+"/namespaces/"+ns+"/services/"+name)
	if err != nil {
		return "", err
	}
	return arktoslab.Str(obj, "spec", "clusterIP"), nil
}

// lookups runs a pod in TP i (tenant/ns) whose one container looks names
// up with getent (the partition-dns image has it, from Debian's libc-bin)
// through the resolv.conf the kubelet gave it: once as it starts, then again
// once names[0] resolves to want (tried every 0.1 s, for at most 10 s: the
// time partition-dns takes to learn the pod's address from its TP, which it
// prints). Its termination message, which the kubelet reports in the pod's
// status in its own TP, has "start NAME ADDRESS" and "known NAME ADDRESS"
// lines (ADDRESS "-" when a name does not resolve), then what the shell
// commands in extra print as "# ..." lines.
func (l *lab) lookups(i int, tenant, ns, pod, want string, names []string, extra string) (start, known map[string]string, err error) {
	var script strings.Builder
	script.WriteString("{ sed 's/^/# /' /etc/resolv.conf; ")
	look := func(when string) {
		for _, n := range names {
			fmt.Fprintf(&script, "a=$(getent hosts %s | awk '{print $1; exit}'); echo \"%s %s ${a:--}\"; ", n, when, n)
		}
	}
	look("start")
	fmt.Fprintf(&script, "t0=$(date +%%s%%N); n=0; until [ \"$(getent hosts %s | awk '{print $1; exit}')\" = %s ] || [ $n -ge 100 ]; do n=$((n+1)); sleep 0.1; done; ", names[0], want)
	fmt.Fprintf(&script, "echo \"# %s answered %s after $n more tries, $(( ($(date +%%s%%N) - t0) / 1000000 )) ms\"; ", names[0], want)
	look("known")
	script.WriteString(extra)
	script.WriteString("} > /dev/termination-log")
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"restartPolicy":"Never","nodeName":%q,
"terminationGracePeriodSeconds":1,"automountServiceAccountToken":false,
"containers":[{"name":"lookup","image":%q,"imagePullPolicy":"Never","command":["/bin/sh","-c",%q]}]}}`, pod, node, l.dnsImage, script.String())
	path := "/api/v1/tenants/" + tenant + "/namespaces/" + ns + "/pods"
	if err := arktoslab.Request("POST", l.tpURL[i]+path, body, nil); err != nil {
		return nil, nil, err
	}
	var msg string
	err = testbin.Poll(90*time.Second, 500*time.Millisecond, func() error {
		obj, err := l.get(i, path+"/"+pod)
		if err != nil {
			return err
		}
		phase := arktoslab.Str(obj, "status", "phase")
		if phase != "Succeeded" && phase != "Failed" {
			return fmt.Errorf("pod %s/%s/%s in tp%d is %q", tenant, ns, pod, i+1, phase)
		}
		st, _ := obj["status"].(map[string]interface{})
		cs, _ := st["containerStatuses"].([]interface{})
		if len(cs) != 1 {
			return fmt.Errorf("pod %s: %d container statuses", pod, len(cs))
		}
		c, _ := cs[0].(map[string]interface{})
		msg = arktoslab.Str(c, "state", "terminated", "message")
		if phase == "Failed" {
			return fmt.Errorf("pod %s failed: %s", pod, msg)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	start, known = map[string]string{}, map[string]string{}
	for _, line := range strings.Split(msg, "\n") {
		if strings.HasPrefix(line, "# tcp ") {
			l.tcpAnswer = strings.TrimPrefix(line, "# tcp ")
		}
		if strings.HasPrefix(line, "# ") {
			fmt.Printf("      %s/%s/%s (tp%d): %s\n", tenant, ns, pod, i+1, strings.TrimPrefix(line, "# "))
			continue
		}
		if f := strings.Fields(line); len(f) == 3 {
			switch f[0] {
			case "start":
				start[f[1]] = f[2]
			case "known":
				known[f[1]] = f[2]
			}
		}
	}
	return start, known, nil
}

// tenantPodResolves: a pod of tenant acme in tp2 finds its own Service app
// by its short name, by app.web and by its full name, all at tp2's
// address; tenant beta's Service app (tp1) never answers for it.
func (l *lab) tenantPodResolves() error {
	own, other, err := l.ips(1, "acme", 0, "beta", "web", "app")
	if err != nil {
		return err
	}
	names := []string{"app", "app.web", "app.web.acme.svc." + clusterDomain}
	// kube-proxy's DNAT, over TCP too: an HTTP request to partition-dns's
	// metrics port through the Service's cluster IP (bash's /dev/tcp).
	tcp := fmt.Sprintf(`echo "# tcp $(timeout 5 bash -c 'exec 3<>/dev/tcp/%s/9153 && printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && head -1 <&3' 2>&1 | tr -d '\r')"; `, clusterDNS)
	start, known, err := l.lookups(1, "acme", "web", "lookup", own, names, tcp)
	if err != nil {
		return err
	}
	if err := expect("at start", start, names, own, other); err != nil {
		return err
	}
	return expect("once known", known, names, own, other)
}

// serviceTCP: the tenant pod in tp2 reached partition-dns (tp1's system
// tenant) over TCP through the Service's cluster IP: kube-proxy programs
// every TP's Services on the node.
func (l *lab) serviceTCP() error {
	if !strings.HasPrefix(l.tcpAnswer, "HTTP/1.0 200") && !strings.HasPrefix(l.tcpAnswer, "HTTP/1.1 200") {
		return fmt.Errorf("GET http://%s:9153/metrics from acme/web/lookup answered %q", clusterDNS, l.tcpAnswer)
	}
	return nil
}

// systemPodResolvesOwnTP: a system pod in tp2 finds kube-dns.kube-system at
// tp2's Service, not tp1's of the same name.
func (l *lab) systemPodResolvesOwnTP() error {
	own, other, err := l.ips(1, "system", 0, "system", "kube-system", "kube-dns")
	if err != nil {
		return err
	}
	names := []string{"kube-dns.kube-system", "kube-dns.kube-system.svc." + clusterDomain}
	start, known, err := l.lookups(1, "system", "kube-system", "lookup", own, names, "")
	if err != nil {
		return err
	}
	l.systemStart = func() error { return expect("at start", start, names, own, other) }
	return expect("once known", known, names, own, other)
}

// systemPodFirstLookups: the same system pod's lookups as its container
// starts, before partition-dns has seen the pod's address in tp2 (the
// kubelet reports it in the pod's status while the container already
// runs): an unknown source's system names are answered from
// --system-partition (tp1), the other TP's kube-dns.
func (l *lab) systemPodFirstLookups() error {
	if l.systemStart == nil {
		return fmt.Errorf("system-pod-resolves-own-tp did not run its pod")
	}
	return l.systemStart()
}

// nodeLocalReady: the node cache, which cluster-up deployed with
// partition-dns (deploy/nodelocal/README.md, kubectl apply -k in tp1's
// system tenant), runs on the lab's node: tp1's DaemonSet controller made its
// pod there, which is ready, and its watcher has put the NOTRACK rules for
// the cluster DNS IP in the node's raw table (the switch is on).
func (l *lab) nodeLocalReady() error {
	err := testbin.Poll(90*time.Second, 500*time.Millisecond, func() error {
		out, err := l.kubectl(l.tpKC[0], "-n", "kube-system", "get", "pods", "-l", "k8s-app=node-local-dns",
			"-o", `jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		if err != nil {
			return err
		}
		ready := false
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 4 && f[1] == node && f[2] == "Running" && f[3] == "True" {
				ready = true
			}
		}
		if !ready {
			return fmt.Errorf("no node-local-dns pod running and ready on %s: %q", node, out)
		}
		n, err := notrack()
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no NOTRACK rule for %s in the raw table: the switch is off", clusterDNS)
		}
		l.notrackOn = n
		return nil
	})
	if err != nil {
		return fmt.Errorf("%v\n%s", err, l.containerLogs("node-local-dns"))
	}
	fmt.Printf("      node-local-dns: ready on %s, switch on (%d NOTRACK rules)\n", node, l.notrackOn)
	return nil
}

// containerLogs is the last lines of the logs of every container (dockerd's
// names: k8s_<container>_<pod>_...) whose name has substr, to say why a
// pod misbehaves: the TPs' API servers cannot reach the kubelet for
// kubectl logs here.
func (l *lab) containerLogs(substr string) string {
	docker := []string{"-H", "unix://" + l.dockerSock}
	out, err := exec.Command("docker", append(docker, "ps", "-a", "--format", "{{.Names}}")...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("docker ps: %v: %s", err, out)
	}
	var b strings.Builder
	for _, name := range strings.Fields(string(out)) {
		if !strings.Contains(name, substr) || strings.HasPrefix(name, "k8s_POD_") {
			continue
		}
		logs, _ := exec.Command("docker", append(docker, "logs", "--tail", "15", name)...).CombinedOutput()
		fmt.Fprintf(&b, "--- %s\n%s", name, logs)
	}
	return b.String()
}

// notrack counts the NOTRACK rules for the cluster DNS IP in the node's raw
// table: the watcher's always-on rules plus, while the switch is on (the
// cache answers), those that keep the queries from kube-proxy's DNAT.
func notrack() (int, error) {
	out, err := exec.Command("iptables-save", "-t", "raw").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("iptables-save -t raw: %v: %s", err, out)
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, clusterDNS) && strings.Contains(line, "NOTRACK") {
			n++
		}
	}
	return n, nil
}

// cacheAnswers is the node cache's hits plus misses (its /metrics).
func cacheAnswers() (float64, error) {
	resp, err := arktoslab.HTTPClient.Get("http://127.0.0.1:9253/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var n float64
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "tpkit_nodelocal_cache_hits_total") || strings.HasPrefix(line, "tpkit_nodelocal_cache_misses_total") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return 0, fmt.Errorf("%q: %v", line, err)
			}
			n += v
		}
	}
	return n, nil
}

// tenantThroughNodeCache: with the switch on, the tenant pod's names come
// through the node cache (its answer counters grow) and from the pod's own
// TP.
func (l *lab) tenantThroughNodeCache() error {
	before, err := cacheAnswers()
	if err != nil {
		return err
	}
	own, other, err := l.ips(1, "acme", 0, "beta", "web", "app")
	if err != nil {
		return err
	}
	names := []string{"app", "app.web", "app.web.acme.svc." + clusterDomain}
	start, known, err := l.lookups(1, "acme", "web", "lookup-nc", own, names, "")
	if err != nil {
		return err
	}
	if err := expect("at start, through the cache", start, names, own, other); err != nil {
		return err
	}
	if err := expect("through the cache", known, names, own, other); err != nil {
		return err
	}
	after, err := cacheAnswers()
	if err != nil {
		return err
	}
	fmt.Printf("      the node cache answered %.0f queries meanwhile\n", after-before)
	if after <= before {
		return fmt.Errorf("the node cache answered nothing (hits+misses %.0f, then %.0f): the pod's queries went around it", before, after)
	}
	return nil
}

// systemThroughNodeCache: a new system pod in tp2 resolves kube-dns through
// the node cache to tp2's Service within the 10 s lookups allows: the cache
// passes the pod's address on as EDNS Client Subnet, which partition-dns
// trusts from the node; and the start-up window's answer (tp1's, TTL 0)
// is not kept by the cache.
func (l *lab) systemThroughNodeCache() error {
	own, other, err := l.ips(1, "system", 0, "system", "kube-system", "kube-dns")
	if err != nil {
		return err
	}
	names := []string{"kube-dns.kube-system"}
	_, known, err := l.lookups(1, "system", "kube-system", "lookup-nc", own, names, "")
	if err != nil {
		return err
	}
	return expect("through the cache", known, names, own, other)
}

// nodeCacheKilled: SIGKILL to the node cache while the lab asks the cluster
// DNS IP for acme's Service every 50 ms; the watcher takes the NOTRACK
// rules away (kube-proxy's DNAT to partition-dns answers), the kubelet
// restarts the cache, the watcher puts them back. Answers must resume
// within 3 s and be right throughout.
func (l *lab) nodeCacheKilled() error {
	own, err := l.serviceIP(1, "acme", "web", "app")
	if err != nil {
		return err
	}
	name := "app.web.acme.svc." + clusterDomain + "."
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	ask := func() (string, error) {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		r, _, err := c.Exchange(m, net.JoinHostPort(clusterDNS, "53"))
		if err != nil {
			return "", err
		}
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				return a.A.String(), nil
			}
		}
		return "", fmt.Errorf("%s", dns.RcodeToString[r.Rcode])
	}
	// The kubelet can restart the cache before the watcher notices it has
	// gone (both take about a second); then the switch never goes off and
	// the failover was not tried, so the cache is killed again, once the
	// kubelet's back-off makes the next restart slower.
	for attempt := 1; ; attempt++ {
		restarted, err := l.killNodeCache(ask, name, own)
		if err != nil || !restarted {
			return err
		}
		if attempt == 3 {
			return fmt.Errorf("the watcher never took the NOTRACK rules away: the kubelet restarted the cache first, %d times", attempt)
		}
		fmt.Printf("      the kubelet restarted the cache before the watcher acted; killing it again\n")
		if err := testbin.Poll(60*time.Second, 200*time.Millisecond, func() error {
			if _, err := nodeCachePID(); err != nil {
				return err
			}
			_, err := ask()
			return err
		}); err != nil {
			return err
		}
	}
}

// killNodeCache kills the node cache once and watches for 8 s: answers
// must stay right, resume within 3 s, and the watcher must switch the
// NOTRACK rules off and, after the kubelet's restart, on again. restarted
// reports a run where the switch never went off because the cache was
// back first (not an error: nodeCacheKilled tries again).
func (l *lab) killNodeCache(ask func() (string, error), name, own string) (restarted bool, err error) {
	pid, err := nodeCachePID()
	if err != nil {
		return false, err
	}
	if got, err := ask(); err != nil || got != own {
		return false, fmt.Errorf("before the kill: %s -> %q, %v", name, got, err)
	}
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return false, err
	}
	var failed, asked int
	var lastFail time.Time
	switchedOff := false
	for time.Since(killed) < 8*time.Second {
		asked++
		got, err := ask()
		if err != nil || got != own {
			if err == nil && got != own {
				return false, fmt.Errorf("%s -> %s after the kill, want %s", name, got, own)
			}
			failed++
			lastFail = time.Now()
		}
		if n, err := notrack(); !switchedOff && err == nil && n < l.notrackOn {
			switchedOff = true
			fmt.Printf("      the watcher took the NOTRACK rules away %s after the kill\n", time.Since(killed).Round(10*time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}
	gap := time.Duration(0)
	if failed > 0 {
		gap = lastFail.Sub(killed)
	}
	fmt.Printf("      %d of %d queries failed; the last failure %s after the kill\n", failed, asked, gap.Round(10*time.Millisecond))
	if gap > 3*time.Second {
		return false, fmt.Errorf("queries failed until %s after the kill", gap.Round(10*time.Millisecond))
	}
	if !switchedOff {
		if now, err := nodeCachePID(); err == nil && now != pid {
			return true, nil
		}
		return false, fmt.Errorf("the watcher never took the NOTRACK rules away")
	}
	// The kubelet restarts the cache; the watcher switches back.
	return false, testbin.Poll(60*time.Second, 200*time.Millisecond, func() error {
		n, err := notrack()
		if err == nil && n < l.notrackOn {
			err = fmt.Errorf("%d NOTRACK rules for %s, %d with the switch on: the switch stays off", n, clusterDNS, l.notrackOn)
		}
		return err
	})
}

// nodeCachePID finds the node cache's process (partition-dns node-cache,
// not its watcher) of the lab's node: the one in the lab's network
// namespace, the other node's runs in its own.
func nodeCachePID() (int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return 0, err
	}
	var found []int
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && strings.HasSuffix(args[0], "partition-dns") && args[1] == "node-cache" {
			if ns, err := os.Readlink(filepath.Join(filepath.Dir(d), "ns", "net")); err != nil || ns != self {
				continue
			}
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("node-cache processes: %v", found)
	}
	return found[0], nil
}

// daemonSetRefused: the patched API server (SystemDaemonSet, tpkit's
// pkg/admission/daemonset) refuses a DaemonSet in regular tenant acme of
// tp2 with Arktos's own message, and takes one in the system tenant.
func (l *lab) daemonSetRefused() error {
	ds := `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds"},"spec":{"selector":{"matchLabels":{"app":"ds"}},` +
		`"template":{"metadata":{"labels":{"app":"ds"}},"spec":{"nodeSelector":{"no-node":"here"},"containers":[{"name":"c","image":"` + l.pause + `"}]}}}}`
	want := `daemonsets.apps "ds" is forbidden: only system tenant is allowed to have DaemonSet`
	err := arktoslab.Request("POST", l.tpURL[1]+"/apis/apps/v1/tenants/acme/namespaces/web/daemonsets", ds, nil)
	if err == nil || !strings.Contains(err.Error(), want) {
		return fmt.Errorf("a DaemonSet in tenant acme: got %v, want %q", err, want)
	}
	if err := arktoslab.Request("POST", l.tpURL[1]+"/apis/apps/v1/tenants/system/namespaces/default/daemonsets", ds, nil); err != nil {
		return fmt.Errorf("a DaemonSet in the system tenant: %v", err)
	}
	fmt.Printf("      tenant acme: %s\n", want)
	return nil
}

// kubeletRestart: the node's kubelet stopped and started again with the
// same flags (the same root dir, so the same TP origin file).
// partition-dns's containers keep running (same container IDs, no
// restart), the node is Ready again, and a new pod of tenant acme runs and
// reports its status in tp2.
func (l *lab) kubeletRestart() error {
	before, err := l.partitionDNSContainers()
	if err != nil {
		return err
	}
	start := time.Now()
	// cluster.sh stops the kubelet (SIGTERM, waiting for it to exit) and
	// starts it again with its flags.
	cmd := exec.Command("bash", filepath.Join(l.root, "hack", "cluster.sh"), "restart-kubelet", node)
	cmd.Env = append(os.Environ(), "CLUSTER_DIR="+l.clusterDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("hack/cluster.sh restart-kubelet %s: %v: %s", node, err, out)
	}
	// Ready as the new kubelet reports it: a heartbeat after its start.
	err = testbin.Poll(90*time.Second, 200*time.Millisecond, func() error {
		out, err := l.kubectl(l.rpKC, "get", "node", node, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}`)
		if err != nil {
			return err
		}
		f := strings.Fields(out)
		if len(f) != 2 {
			return fmt.Errorf("node %s: Ready condition %q", node, out)
		}
		beat, err := time.Parse(time.RFC3339, f[1])
		if err != nil {
			return err
		}
		if f[0] != "True" || beat.Before(start.Truncate(time.Second)) {
			return fmt.Errorf("node %s: Ready=%s, last heartbeat %s (the kubelet restarted at %s)", node, f[0], f[1], start.UTC().Format(time.RFC3339))
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("      node Ready (a new heartbeat) %s after the kubelet's restart\n", time.Since(start).Round(100*time.Millisecond))
	// A restarted kubelet (Kubernetes 1.18's) forgets its probes' results:
	// the pods are unready, and their Service without endpoints, until a
	// readiness probe passes again.
	if err := l.partitionDNSReady(60*time.Second, start); err != nil {
		return err
	}
	fmt.Printf("      partition-dns ready again %s after the kubelet's restart\n", time.Since(start).Round(100*time.Millisecond))
	own, err := l.serviceIP(1, "acme", "web", "app")
	if err != nil {
		return err
	}
	names := []string{"app.web"}
	start2, _, err := l.lookups(1, "acme", "web", "after-restart", own, names, "")
	if err != nil {
		return err
	}
	if err := expect("after the restart", start2, names, own, ""); err != nil {
		return err
	}
	after, err := l.partitionDNSContainers()
	if err != nil {
		return err
	}
	if strings.Join(after, ",") != strings.Join(before, ",") {
		return fmt.Errorf("partition-dns's containers changed across the kubelet's restart: %v, then %v", before, after)
	}
	return nil
}

// partitionDNSContainers lists "pod=containerID/restarts" of partition-dns's
// running pods in tp1.
func (l *lab) partitionDNSContainers() ([]string, error) {
	out, err := l.kubectl(l.tpKC[0], "-n", "kube-system", "get", "pods", "-l", "app.kubernetes.io/name=partition-dns",
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.containerStatuses[0].containerID}/{.status.containerStatuses[0].restartCount}{"\n"}{end}`)
	if err != nil {
		return nil, err
	}
	list := strings.Fields(out)
	sort.Strings(list)
	if len(list) != 2 {
		return nil, fmt.Errorf("partition-dns pods: %v", list)
	}
	return list, nil
}

// expect: every name resolved to want, none to notWant.
func expect(when string, got map[string]string, names []string, want, notWant string) error {
	var bad []string
	for _, n := range names {
		fmt.Printf("      %s: %s -> %s\n", when, n, got[n])
		switch got[n] {
		case want:
		case "":
			bad = append(bad, fmt.Sprintf("%s %s: no lookup", when, n))
		case notWant:
			bad = append(bad, fmt.Sprintf("%s %s resolved to the other TP's %s", when, n, notWant))
		default:
			bad = append(bad, fmt.Sprintf("%s %s resolved to %q, want %s", when, n, got[n], want))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

func writeKubeconfig(t *testing.T, path, server, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- cluster: {server: %q}\n  name: %s\nusers:\n- name: admin\n  user: {}\ncontexts:\n- context: {cluster: %s, user: admin}\n  name: %s\ncurrent-context: %s\n", server, name, name, name, name)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// deployOverlayClean: after cluster-up's deploy steps, partition-dns's
// Deployment and the node cache's DaemonSet in tp1 run one image tag (the
// overlay set both), and git status of the checkout is what it was before
// cluster-up (run.sh's GIT_STATUS_BEFORE).
func (l *lab) deployOverlayClean() error {
	dep, err := l.kubectl(l.tpKC[0], "-n", "kube-system", "get", "deployment", "partition-dns", "-o", "jsonpath={.spec.template.spec.containers[*].image}")
	if err != nil {
		return err
	}
	ds, err := l.kubectl(l.tpKC[0], "-n", "kube-system", "get", "daemonset", "node-local-dns", "-o", "jsonpath={.spec.template.spec.containers[*].image}")
	if err != nil {
		return err
	}
	images := strings.Fields(dep + " " + ds)
	tags := map[string]bool{}
	for _, im := range images {
		tags[im[strings.LastIndex(im, ":")+1:]] = true
	}
	status, err := gitStatus(l.root)
	if err != nil {
		return err
	}
	fmt.Printf("      images %v; git status %q (before the lab %q)\n", images, status, l.gitStatus)
	if len(tags) != 1 || status != l.gitStatus {
		return fmt.Errorf("want one tag for every image, and the checkout as it was")
	}
	return nil
}

// gitStatus is git status --porcelain of the checkout at root.
func gitStatus(root string) (string, error) {
	b, err := exec.Command("git", "-C", root, "status", "--porcelain").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git status: %v: %s", err, b)
	}
	return strings.TrimSpace(string(b)), nil
}

//go:build localcluster

package localcluster

import (
	"bufio"
	"fmt"
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

// The names cluster-up gives (hack/cluster.sh).
var nodes = []string{"tpkit-node1", "tpkit-node2"}

const (
	clusterDomain = "cluster.local"
	// image is cluster-up's busybox (Debian's static build): a shell,
	// wget, nslookup and httpd.
	image = "tpkit-lab/busybox:1.29"
	// tenants: a regular tenant of each TP, which lives in that TP only.
	tenantTP1, tenantTP2 = "beta", "acme"
)

type cluster struct {
	t       *testing.T
	dir     string // CLUSTER_DIR
	kubectl string // Arktos's kubectl, from the cluster's ARKTOS_BIN
	checks  arktoslab.Checks
}

func (c *cluster) check(name string, fn func() error) { _ = c.checks.Run(name, fn) }

func TestLocalCluster(t *testing.T) {
	c := &cluster{t: t, dir: os.Getenv("CLUSTER_DIR"), checks: arktoslab.Checks{Width: 26}}
	if c.dir == "" {
		c.dir = "/tmp/tpkit-cluster"
	}
	state, err := readState(filepath.Join(c.dir, "state"))
	if err != nil {
		t.Fatalf("no cluster is up (make cluster-up): %v", err)
	}
	c.kubectl = filepath.Join(state["bin"], "kubectl")

	c.check("nodes-ready", c.nodesReady)
	c.check("webhook-in-both-tps", c.webhookInBothTPs)
	c.check("tenant-app-across-nodes", c.tenantApps)
	c.check("cross-node-system-service", c.crossNodeSystem)
	c.check("node-caches-answer", c.nodeCaches)
	// Last: node 2 stays down.
	c.check("node-down", c.nodeDown)

	fmt.Println(c.checks.Summary())
	if len(c.checks.Failed()) > 0 {
		t.Fail()
	}
}

func readState(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	if m["bin"] == "" {
		return nil, fmt.Errorf("%s names no bin=", path)
	}
	return m, nil
}

// k runs Arktos's kubectl against partition part (rp, tp1, tp2), in tenant
// (the system tenant when "").
func (c *cluster) k(part, tenant string, args ...string) (string, error) {
	a := []string{"--kubeconfig=" + filepath.Join(c.dir, "kubeconfig", part+".kubeconfig"),
		"--cache-dir=" + filepath.Join(c.dir, "kcache"), "--request-timeout=20s"}
	if tenant != "" {
		a = append(a, "--tenant="+tenant)
	}
	cmd := exec.Command(c.kubectl, append(a, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// apply gives manifest to kubectl apply -f - in part's tenant.
func (c *cluster) apply(part, tenant, manifest string) error {
	return c.kubectlIn(part, tenant, manifest, "apply", "-f", "-")
}

// kubectlIn runs kubectl args in part's tenant with manifest on its stdin.
func (c *cluster) kubectlIn(part, tenant, manifest string, args ...string) error {
	a := []string{"--kubeconfig=" + filepath.Join(c.dir, "kubeconfig", part+".kubeconfig"),
		"--cache-dir=" + filepath.Join(c.dir, "kcache")}
	if tenant != "" {
		a = append(a, "--tenant="+tenant)
	}
	cmd := exec.Command(c.kubectl, append(a, args...)...)
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl %s in %s/%s: %v: %s", args[0], part, tenant, err, out)
	}
	return nil
}

// onNode runs argv in node's network and mount namespaces.
func (c *cluster) onNode(node string, argv ...string) (string, error) {
	holder, err := os.ReadFile(filepath.Join(c.dir, node, "holder.pid"))
	if err != nil {
		return "", err
	}
	cmd := exec.Command("nsenter", append([]string{"-t", strings.TrimSpace(string(holder)), "-m", "-n", "--"}, argv...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("on %s: %s: %v: %s", node, strings.Join(argv, " "), err, out)
	}
	return string(out), nil
}

func (c *cluster) nodesReady() error {
	return testbin.Poll(60*time.Second, time.Second, func() error {
		out, err := c.k("rp", "", "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}`)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if !strings.Contains(out, n+"=True") {
				return fmt.Errorf("node %s not Ready: %s", n, out)
			}
		}
		return nil
	})
}

// webhookInBothTPs: tpkit's admission webhook, which cluster-up deployed in
// both TPs, answers each TP's API server (which reaches it at its pods'
// addresses on the nodes): creating a Tenant named system is refused in
// its words, a refusal Arktos has none of its own for.
func (c *cluster) webhookInBothTPs() error {
	for _, part := range []string{"tp1", "tp2"} {
		// create, not apply: apply would patch a system Tenant that exists.
		err := c.kubectlIn(part, "", `{"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": "system"}, "spec": {"storageClusterId": "0"}}`, "create", "-f", "-")
		want := `admission webhook "tenants.tp-admission-webhook.tpkit.dev" denied the request`
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "exists in every tenant partition") {
			return fmt.Errorf("%s: creating Tenant system: got %v, want %q and the webhook's reason", part, err, want)
		}
		fmt.Printf("      %s: Tenant system refused by tpkit's webhook\n", part)
	}
	return nil
}

// server is a pod template's container that serves body (a shell
// expression) over HTTP on 8080.
func server(body string) string {
	return fmt.Sprintf(`{"name": "web", "image": %q, "imagePullPolicy": "Never",
  "command": ["sh", "-c", "mkdir -p /var/www && echo %s > /var/www/index.html && exec httpd -f -p 8080 -h /var/www"],
  "ports": [{"containerPort": 8080}],
  "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}}`, image, body)
}

// client is a pod on node that sleeps, for kubectl exec.
func client(name, ns, node string) string {
	return fmt.Sprintf(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": %q, "namespace": %q},
 "spec": {"nodeName": %q, "terminationGracePeriodSeconds": 1,
  "containers": [{"name": "c", "image": %q, "imagePullPolicy": "Never", "command": ["sleep", "100000"]}]}}`, name, ns, node, image)
}

// running waits until the pods of tenant/ns in part run and are ready: for
// each name of want, as many pods of that name or of that name and a
// suffix (a Deployment's) as it says. It returns each pod's node.
func (c *cluster) running(part, tenant, ns string, want map[string]int) (map[string]string, error) {
	var where map[string]string
	err := testbin.Poll(120*time.Second, time.Second, func() error {
		out, err := c.k(part, tenant, "-n", ns, "get", "pods", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase} {.status.conditions[?(@.type=="Ready")].status} {.metadata.deletionTimestamp}{"\n"}{end}`)
		if err != nil {
			return err
		}
		where = map[string]string{}
		count := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) != 4 || f[2] != "Running" || f[3] != "True" {
				continue // not ready, or being deleted (a fifth field)
			}
			for n := range want {
				if f[0] == n || strings.HasPrefix(f[0], n+"-") {
					count[n]++
					where[f[0]] = f[1]
				}
			}
		}
		for n, w := range want {
			if count[n] != w {
				return fmt.Errorf("%s/%s in %s: %d pods of %s running and ready, want %d: %q", tenant, ns, part, count[n], n, w, out)
			}
		}
		return nil
	})
	return where, err
}

// get runs wget in pod (of tenant/ns in part) n times and returns the
// answers in order; a failed try is "" (busybox's wget -T crashes, so
// timeout bounds each try).
func (c *cluster) get(part, tenant, ns, pod, url string, n int) []string {
	script := fmt.Sprintf(`for i in $(seq %d); do timeout 5 wget -q -O - %s 2>/dev/null | tr -d '\n'; echo; done`, n, url)
	out, err := c.k(part, tenant, "-n", ns, "exec", pod, "--", "sh", "-c", script)
	if err != nil {
		return []string{"ERROR: " + err.Error()}
	}
	var answers []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		answers = append(answers, strings.TrimSpace(sc.Text()))
	}
	return answers
}

// tenantApps: in each TP a regular tenant with a two-replica Deployment,
// one replica on each node, and its Service; a client pod on each node
// resolves the Service by its full and short names and is answered by
// both replicas, across the bridge.
func (c *cluster) tenantApps() error {
	for _, tp := range []struct{ part, tenant string }{{"tp1", tenantTP1}, {"tp2", tenantTP2}} {
		if err := c.apply(tp.part, "", fmt.Sprintf(`{"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": %q}, "spec": {"storageClusterId": "0"}}`, tp.tenant)); err != nil {
			return err
		}
		manifest := fmt.Sprintf(`{"apiVersion": "v1", "kind": "List", "items": [
{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}},
{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "hello", "namespace": "web"},
 "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "hello"}},
  "template": {"metadata": {"labels": {"app": "hello"}}, "spec": {
   "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
     {"labelSelector": {"matchLabels": {"app": "hello"}}, "topologyKey": "kubernetes.io/hostname"}]}},
   "terminationGracePeriodSeconds": 1, "containers": [%s]}}}},
{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hello", "namespace": "web"},
 "spec": {"selector": {"app": "hello"}, "ports": [{"port": 80, "targetPort": 8080}]}},
%s, %s]}`, server(`$(hostname)`), client("client1", "web", nodes[0]), client("client2", "web", nodes[1]))
		// The namespace first: Arktos's TenantExists admission and the
		// namespace's lifecycle take a moment after the tenant.
		if err := testbin.Poll(30*time.Second, time.Second, func() error { return c.apply(tp.part, tp.tenant, manifest) }); err != nil {
			return err
		}
		where, err := c.running(tp.part, tp.tenant, "web", map[string]int{"hello": 2, "client1": 1, "client2": 1})
		if err != nil {
			return err
		}
		replicas := map[string]string{} // pod name → node
		for pod, node := range where {
			if strings.HasPrefix(pod, "hello-") {
				replicas[pod] = node
			}
		}
		if len(replicas) != 2 || replicas[keys(replicas)[0]] == replicas[keys(replicas)[1]] {
			return fmt.Errorf("%s: hello's replicas are not one on each node: %v", tp.part, replicas)
		}
		for _, cl := range []string{"client1", "client2"} {
			for _, url := range []string{fmt.Sprintf("http://hello.web.%s.svc.%s", tp.tenant, clusterDomain), "http://hello"} {
				answers := c.get(tp.part, tp.tenant, "web", cl, url, 12)
				seen := map[string]int{}
				for _, a := range answers {
					if _, ok := replicas[a]; !ok {
						return fmt.Errorf("%s/%s on %s: %s answered %q, not a replica of hello (%v); all: %q", tp.tenant, cl, where[cl], url, a, keys(replicas), answers)
					}
					seen[a]++
				}
				if len(answers) != 12 || len(seen) != 2 {
					return fmt.Errorf("%s/%s: %s: %d answers from %d replicas, want 12 from both: %q", tp.tenant, cl, url, len(answers), len(seen), answers)
				}
			}
			fmt.Printf("      %s (%s) %s on %s: hello answered 24 of 24 from both replicas (%s)\n", tp.part, tp.tenant, cl, where[cl], strings.Join(sortedNodes(replicas), ", "))
		}
	}
	return nil
}

// crossNodeSystem: the system tenant of each TP has namespace xnode with a
// Service echo whose only endpoint is a pod on node 2 answering its TP's
// name; the same names in both TPs. A pod on node 1 reaches it through the
// Service, and always its own TP's endpoint.
func (c *cluster) crossNodeSystem() error {
	for _, part := range []string{"tp1", "tp2"} {
		manifest := fmt.Sprintf(`{"apiVersion": "v1", "kind": "List", "items": [
{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "xnode"}},
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "echo", "namespace": "xnode", "labels": {"app": "echo"}},
 "spec": {"nodeName": %q, "terminationGracePeriodSeconds": 1, "containers": [%s]}},
{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "echo", "namespace": "xnode"},
 "spec": {"selector": {"app": "echo"}, "ports": [{"port": 80, "targetPort": 8080}]}},
%s]}`, nodes[1], server(part), client("probe", "xnode", nodes[0]))
		if err := testbin.Poll(30*time.Second, time.Second, func() error { return c.apply(part, "", manifest) }); err != nil {
			return err
		}
		if _, err := c.running(part, "", "xnode", map[string]int{"echo": 1, "probe": 1}); err != nil {
			return err
		}
	}
	for _, part := range []string{"tp1", "tp2"} {
		ep, err := c.k(part, "", "-n", "xnode", "get", "endpoints", "echo", "-o", "jsonpath={.subsets[*].addresses[*].nodeName}")
		if err != nil {
			return err
		}
		if strings.TrimSpace(ep) != nodes[1] {
			return fmt.Errorf("%s: echo's endpoints are on %q, want only %s", part, ep, nodes[1])
		}
		for _, url := range []string{"http://echo.xnode.svc." + clusterDomain, "http://echo"} {
			answers := c.get(part, "", "xnode", "probe", url, 10)
			for _, a := range answers {
				if a != part {
					return fmt.Errorf("%s: system/xnode/probe on %s got %q from %s, want %q (its own TP's endpoint on %s); all: %q", part, nodes[0], a, url, part, nodes[1], answers)
				}
			}
			if len(answers) != 10 {
				return fmt.Errorf("%s: %d answers from %s, want 10: %q", part, len(answers), url, answers)
			}
		}
		fmt.Printf("      %s: system/xnode/probe on %s reached echo on %s, own TP's endpoint 20 of 20\n", part, nodes[0], nodes[1])
	}
	return nil
}

// nodeCaches: the node cache of each node counts the lookups its node's
// pods make (its hits and misses, from /metrics on the node's 127.0.0.1).
func (c *cluster) nodeCaches() error {
	for i, node := range nodes {
		before, err := c.cacheAnswers(node)
		if err != nil {
			return err
		}
		pod := fmt.Sprintf("client%d", i+1)
		name := fmt.Sprintf("hello.web.%s.svc.%s", tenantTP2, clusterDomain)
		out, err := c.k("tp2", tenantTP2, "-n", "web", "exec", pod, "--", "sh", "-c",
			fmt.Sprintf("for i in 1 2 3 4 5; do nslookup %s >/dev/null && echo ok; done", name))
		if err != nil {
			return err
		}
		if n := strings.Count(out, "ok"); n != 5 {
			return fmt.Errorf("%s/web/%s on %s: %d of 5 lookups of %s answered: %s", tenantTP2, pod, node, n, name, out)
		}
		after, err := c.cacheAnswers(node)
		if err != nil {
			return err
		}
		if after-before < 5 {
			return fmt.Errorf("the node cache of %s answered %v lookups while its pod made 5 (%v → %v)", node, after-before, before, after)
		}
		fmt.Printf("      %s: its node cache answered %v lookups for the 5 of %s\n", node, after-before, pod)
	}
	return nil
}

// cacheAnswers is the node cache's hits plus misses on node.
func (c *cluster) cacheAnswers(node string) (float64, error) {
	out, err := c.onNode(node, "curl", "-sf", "--max-time", "5", "http://127.0.0.1:9253/metrics")
	if err != nil {
		return 0, err
	}
	var n float64
	found := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "tpkit_nodelocal_cache_hits_total") || strings.HasPrefix(line, "tpkit_nodelocal_cache_misses_total") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %q: %v", node, line, err)
			}
			n += v
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("%s: the node cache's /metrics has no hit or miss counters", node)
	}
	return n, nil
}

// nodeDown kills node 2's kubelet, dockerd, containerd and every container
// (all its processes but the one holding its namespaces), as a node that
// dies. Node 1's client pods must go on resolving, every lookup answered
// from the kill on, and reach the Services that have an endpoint on node 1,
// in both TPs. A request may go to node 2's dead endpoint until the
// resource partition's node lifecycle finds node 2 not ready (its 40 s
// grace) and the endpoints change, as in any Kubernetes cluster; from the
// first clean round on, every round must be clean.
func (c *cluster) nodeDown() error {
	holder, err := os.ReadFile(filepath.Join(c.dir, nodes[1], "holder.pid"))
	if err != nil {
		return err
	}
	killed := 0
	root := filepath.Join("/sys/fs/cgroup/pids/tpkit-cluster", nodes[1])
	err = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(b)) {
			if f == strings.TrimSpace(string(holder)) {
				continue
			}
			if pid, err := strconv.Atoi(f); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	down := time.Now()
	fmt.Printf("      %s: killed %d processes (kubelet, kube-proxy, dockerd, containerd, containers)\n", nodes[1], killed)
	type probe struct{ part, tenant, pod, url, want string }
	probes := []probe{
		{"tp1", tenantTP1, "client1", fmt.Sprintf("http://hello.web.%s.svc.%s", tenantTP1, clusterDomain), nodes[0]},
		{"tp2", tenantTP2, "client1", fmt.Sprintf("http://hello.web.%s.svc.%s", tenantTP2, clusterDomain), nodes[0]},
		{"tp2", tenantTP2, "client1", "http://hello", nodes[0]},
	}
	// The replica on node 1 of each tenant's hello.
	own := map[string]string{}
	for _, p := range probes {
		out, err := c.k(p.part, p.tenant, "-n", "web", "get", "pods", "-l", "app=hello", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}`)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[1] == nodes[0] {
				own[p.part] = f[0]
			}
		}
	}
	// Each round: lookups of the tenants' names and requests to their
	// Services from node 1's clients, counted apart: a lookup goes through
	// node 1's cache to partition-dns, a request to the Service's endpoints.
	var firstClean time.Duration
	rounds, failedAfter := 0, 0
	dnsTried, dnsFailed, httpTried, httpFailed := 0, 0, 0, 0
	var lastBad string
	deadline := down.Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		bad := ""
		for _, p := range probes[:2] {
			name := fmt.Sprintf("hello.web.%s.svc.%s", p.tenant, clusterDomain)
			out, err := c.k(p.part, p.tenant, "-n", "web", "exec", p.pod, "--", "sh", "-c",
				fmt.Sprintf("for i in 1 2 3 4 5; do timeout 5 nslookup %s >/dev/null 2>&1 && echo ok || echo fail; done", name))
			n := strings.Count(out, "ok")
			if err != nil {
				n = 0
			}
			dnsTried += 5
			dnsFailed += 5 - n
			if n != 5 {
				bad = fmt.Sprintf("%s %s/%s: %d of 5 lookups of %s answered: %v %s", p.part, p.tenant, p.pod, n, name, err, out)
			}
		}
		for _, p := range probes {
			for _, a := range c.get(p.part, p.tenant, "web", p.pod, p.url, 5) {
				httpTried++
				if a != own[p.part] {
					httpFailed++
					bad = fmt.Sprintf("%s %s/%s: %s answered %q, want %q", p.part, p.tenant, p.pod, p.url, a, own[p.part])
				}
			}
		}
		rounds++
		switch {
		case bad == "" && firstClean == 0:
			firstClean = time.Since(down)
			fmt.Printf("      until then: %d of %d lookups and %d of %d requests failed\n", dnsFailed, dnsTried, httpFailed, httpTried)
		case bad != "" && firstClean != 0:
			failedAfter++
			lastBad = bad
		case bad != "":
			lastBad = bad
		}
		if firstClean != 0 && time.Since(down) > firstClean+30*time.Second {
			break
		}
	}
	if firstClean == 0 {
		return fmt.Errorf("node 1's pods never got clean answers in 3 minutes after %s went down (%d of %d lookups and %d of %d requests failed); last: %s",
			nodes[1], dnsFailed, dnsTried, httpFailed, httpTried, lastBad)
	}
	if dnsFailed > 0 {
		// Node 1's cache and partition-dns's replica on node 1 are up: a
		// lookup has no reason to fail at any time.
		return fmt.Errorf("%d of %d lookups from node 1 failed after %s went down; last: %s", dnsFailed, dnsTried, nodes[1], lastBad)
	}
	if failedAfter > 0 {
		return fmt.Errorf("%d rounds failed after the first clean one (%s after the kill); last: %s", failedAfter, firstClean.Round(time.Second), lastBad)
	}
	fmt.Printf("      %s's pods: every lookup and request answered (by node 1's replica) from %s after the kill on, %d rounds of 10 lookups and 15 requests (the last 30 s all clean)\n",
		nodes[0], firstClean.Round(100*time.Millisecond), rounds)
	return nil
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedNodes(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+" on "+v)
	}
	sort.Strings(out)
	return out
}

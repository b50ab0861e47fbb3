package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

const deployDir = "../../deploy/partition-dns"

// readManifests decodes each YAML document of deploy/partition-dns/name
// strictly, so an unknown or misspelt field fails the test.
func readManifests(t *testing.T, name string, into ...any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(b, []byte("\n---\n"))
	if len(docs) != len(into) {
		t.Fatalf("%s: %d documents, want %d", name, len(docs), len(into))
	}
	for i, d := range docs {
		if err := yaml.UnmarshalStrict(d, into[i]); err != nil {
			t.Fatalf("%s document %d: %v", name, i+1, err)
		}
	}
}

func port(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return int32(n)
}

// TestDeployManifests keeps deploy/partition-dns true to the program: the
// Deployment's args are flags it accepts, its ports and probes are the ones
// those flags open, the kubeconfigs are on the mounted secret, the Service
// selects the pods, and the per-TP role lets it list and watch what it reads.
func TestDeployManifests(t *testing.T) {
	var d appsv1.Deployment
	var svc corev1.Service
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	var cmRole rbacv1.Role
	var cmBinding rbacv1.RoleBinding
	readManifests(t, "deployment.yaml", &d)
	readManifests(t, "service.yaml", &svc)
	readManifests(t, "rbac-per-tp.yaml", &role, &binding, &cmRole, &cmBinding)

	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("want one container, got %d", len(cs))
	}
	c := cs[0]
	cfg, err := parseFlags(c.Args, io.Discard)
	if err != nil {
		t.Fatalf("deployment args %q: %v", c.Args, err)
	}

	ports := map[string]corev1.ContainerPort{}
	for _, p := range c.Ports {
		ports[p.Name] = p
	}
	want := []struct {
		name  string
		port  int32
		proto corev1.Protocol
	}{
		{"dns", port(t, cfg.listen), corev1.ProtocolUDP},
		{"dns-tcp", port(t, cfg.listen), corev1.ProtocolTCP},
		{"metrics", port(t, cfg.metricsListen), corev1.ProtocolTCP},
		{"health", port(t, cfg.healthListen), corev1.ProtocolTCP},
		{"ready", port(t, cfg.readyListen), corev1.ProtocolTCP},
	}
	for _, w := range want {
		p, ok := ports[w.name]
		if !ok || p.ContainerPort != w.port || p.Protocol != w.proto {
			t.Errorf("container port %s = %+v, want %d/%s from the flags", w.name, p, w.port, w.proto)
		}
	}
	// The CoreDNS way: /health on the health port, /ready on the ready port.
	for _, pr := range []struct {
		name string
		p    *corev1.Probe
		path string
		port int32
	}{{"liveness", c.LivenessProbe, "/health", port(t, cfg.healthListen)}, {"readiness", c.ReadinessProbe, "/ready", port(t, cfg.readyListen)}} {
		if pr.p == nil || pr.p.HTTPGet == nil || pr.p.HTTPGet.Path != pr.path || pr.p.HTTPGet.Port.IntValue() != int(pr.port) {
			t.Errorf("%s probe %+v, want GET %s on port %d", pr.name, pr.p, pr.path, pr.port)
		}
	}

	if len(cfg.part.KubeconfigPaths) < 2 {
		t.Errorf("the example should name several TPs: %v", cfg.part.KubeconfigPaths)
	}
	for _, kc := range cfg.part.KubeconfigPaths {
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || strings.HasPrefix(kc, m.MountPath+"/")
		}
		if !mounted {
			t.Errorf("kubeconfig %s is not on a mounted volume", kc)
		}
	}

	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v || d.Spec.Selector.MatchLabels[k] != v {
			t.Errorf("service selector %s=%s does not match the pods", k, v)
		}
	}
	for _, sp := range svc.Spec.Ports {
		if _, ok := ports[sp.TargetPort.String()]; !ok {
			t.Errorf("service port %s targets %s, which the container does not open", sp.Name, sp.TargetPort.String())
		}
	}

	// What pkg/dns/source lists and watches in every TP.
	reads := map[string][]string{"": {"services", "pods", "namespaces"}, "discovery.k8s.io": {"endpointslices"}}
	for group, resources := range reads {
		for _, res := range resources {
			allowed := false
			for _, r := range role.Rules {
				if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, res) &&
					slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch") {
					allowed = true
				}
			}
			if !allowed {
				t.Errorf("the per-TP role does not let partition-dns list and watch %s.%s", res, group)
			}
		}
	}
	if binding.RoleRef.Name != role.Name {
		t.Errorf("binding refers to %q, the role is %q", binding.RoleRef.Name, role.Name)
	}
	// --config-map: its namespace's ConfigMaps, by the same user.
	cmAllowed := false
	for _, r := range cmRole.Rules {
		cmAllowed = cmAllowed || slices.Contains(r.Resources, "configmaps") && slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch")
	}
	if cfg.configMap == "" || cmRole.Namespace != cfg.configMapNS || !cmAllowed {
		t.Errorf("--config-map %s/%s: the role in %s lets it list and watch configmaps: %v", cfg.configMapNS, cfg.configMap, cmRole.Namespace, cmAllowed)
	}
	if cmBinding.RoleRef.Name != cmRole.Name || cmBinding.Namespace != cmRole.Namespace || len(cmBinding.Subjects) != 1 || cmBinding.Subjects[0] != binding.Subjects[0] {
		t.Errorf("the ConfigMap role's binding %+v does not bind partition-dns's user %+v to %s", cmBinding, binding.Subjects, cmRole.Name)
	}
	// The label by which tools (Kubernetes's e2e DNS specs among them) find
	// the cluster DNS pods.
	if d.Spec.Template.Labels["k8s-app"] != "kube-dns" {
		t.Errorf("pod labels %v lack k8s-app=kube-dns", d.Spec.Template.Labels)
	}
}

// TestCoreDNSManifestProbes: kubeadm's CoreDNS Deployment with only its
// image and arguments changed to partition-dns's passes its probes: the
// liveness and readiness GETs, at the ports and paths the manifest names,
// answer 200 once the TPs have synced. The probe ports are the program's
// defaults, so this runs partition-dns on them (8080 and 8181).
func TestCoreDNSManifestProbes(t *testing.T) {
	var d appsv1.Deployment
	b, err := os.ReadFile("testdata/coredns-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		t.Fatal(err)
	}
	c := &d.Spec.Template.Spec.Containers[0]
	cl := faketp.StartT(t, faketp.Options{Partitions: 2})
	c.Image = "tpkit/partition-dns:latest"
	c.Args = []string{"--tenant-server-kubeconfig=" + strings.Join(cl.KubeconfigPaths(), ","),
		// Not the manifest's business: DNS and metrics on free loopback ports.
		"--listen=" + freePort(t), "--metrics-listen=" + freePort(t), "--upstream=none"}
	pd := runProgram(t, c.Args)
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		url := fmt.Sprintf("%s://127.0.0.1:%d%s", strings.ToLower(string(p.HTTPGet.Scheme)), p.HTTPGet.Port.IntValue(), p.HTTPGet.Path)
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := get(url)
			if code == http.StatusOK {
				break
			}
			select {
			case <-pd.done:
				t.Fatalf("partition-dns stopped before its %s probe passed: %v", name, pd.err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s probe %s: %d %q", name, url, code, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

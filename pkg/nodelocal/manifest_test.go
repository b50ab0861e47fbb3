package nodelocal

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestDaemonSetManifest reads deploy/nodelocal and checks what the issue
// asks of it, and that every container's arguments parse as its mode's
// flags.
func TestDaemonSetManifest(t *testing.T) {
	b, err := os.ReadFile("../../deploy/nodelocal/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(b, &ds); err != nil {
		t.Fatalf("daemonset.yaml: %v", err)
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostNetwork {
		t.Error("not hostNetwork")
	}
	if ds.Spec.Selector == nil || ds.Spec.Selector.MatchLabels["k8s-app"] != ds.Spec.Template.Labels["k8s-app"] {
		t.Error("selector does not match the template")
	}
	lock := ""
	for _, v := range spec.Volumes {
		if v.HostPath != nil && v.HostPath.Path == "/run/xtables.lock" {
			lock = v.Name
		}
	}
	if lock == "" {
		t.Error("no xtables lock hostPath volume")
	}
	env := env(map[string]string{"PARTITION_DNS_SERVICE_HOST": "10.0.0.10", "NODE_LOCAL_UPSTREAM_SERVICE_HOST": "10.0.0.50"})
	modes := map[string]bool{}
	for _, c := range spec.Containers {
		if len(c.Args) == 0 {
			t.Errorf("container %s has no mode argument", c.Name)
			continue
		}
		mode := c.Args[0]
		modes[mode] = true
		switch mode {
		case "node-cache":
			o, err := ParseCacheFlags(append(c.Args[1:], "--upstream-servers=192.0.2.53"), env)
			if err != nil {
				t.Errorf("node-cache args: %v", err)
			} else if o.SetupIptables {
				t.Error("node-cache must leave the rules to the watcher")
			}
		case "node-cache-watch":
			o, err := ParseWatchFlags(c.Args[1:], env)
			if err != nil {
				t.Errorf("node-cache-watch args: %v", err)
			} else if len(o.Watch.Rules) != 24 {
				t.Errorf("watcher rule set %d rules, want 24 for two local IPs", len(o.Watch.Rules))
			}
		default:
			t.Errorf("container %s: unknown mode %q", c.Name, mode)
		}
		if !hasCap(c, "NET_ADMIN") {
			t.Errorf("container %s lacks NET_ADMIN", c.Name)
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			if m.Name == lock && m.MountPath == "/run/xtables.lock" {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("container %s does not mount the xtables lock", c.Name)
		}
	}
	if !modes["node-cache"] || !modes["node-cache-watch"] {
		t.Errorf("modes %v, want both containers", modes)
	}
	svc, err := os.ReadFile("../../deploy/nodelocal/service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var s corev1.Service
	if err := yaml.UnmarshalStrict(svc, &s); err != nil || s.Name != "node-local-upstream" || len(s.Spec.Selector) == 0 {
		t.Fatalf("service.yaml: %v %+v", err, s.ObjectMeta)
	}
	// node-local-upstream must select partition-dns's pods, as
	// deploy/partition-dns runs them.
	dep, err := os.ReadFile("../../deploy/partition-dns/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(dep, &d); err != nil {
		t.Fatal(err)
	}
	for k, v := range s.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("node-local-upstream selects %s=%s; partition-dns's pods have %v", k, v, d.Spec.Template.Labels)
		}
	}
}

func hasCap(c corev1.Container, name string) bool {
	if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
		return false
	}
	for _, x := range c.SecurityContext.Capabilities.Add {
		if strings.EqualFold(string(x), name) {
			return true
		}
	}
	return false
}

package deploy

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// gitStatus is git status of deploy/, untracked files included.
func gitStatus(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", "../..", "status", "--porcelain", "--untracked-files=all", "--", "deploy").Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	return string(out)
}

// kustomize renders an overlay with the real kubectl kustomize.
func kustomize(t *testing.T, dir string) [][]byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("kubectl", "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v: %s", dir, err, stderr.String())
	}
	return documents(out)
}

// TestDeployOverlay: hack/deploy-overlay.sh writes overlays outside the
// checkout that kubectl kustomize renders with every tpkit image at the one
// tag and registry given (partition-dns's Deployment and the node cache's
// DaemonSet alike), partition-dns's kubeconfig list for N TPs, its
// --pod-cidr and --trusted-forwarders, the Service's cluster IP and the
// webhook's CA, and the Arktos base's output still fits Arktos; git status
// of deploy/ is the same before and after, and an OUT inside the checkout
// is refused.
func TestDeployOverlay(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("kubectl is missing: hack/ensure-tools.sh kubectl")
	}
	before := gitStatus(t)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nnot checked here\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, newer := range []bool{false, true} {
		out := t.TempDir()
		args := []string{out, "--tag", "v9.8.7-1-gabcdef0", "--registry", "registry.example:5000/", "--tps", "3",
			"--pod-cidr", "10.244.0.0/16", "--trusted-forwarders", "10.0.0.0/16", "--cluster-ip", "10.96.0.10", "--webhook-ca", ca}
		if newer {
			args = append(args, "--newer")
		}
		if b, err := exec.Command("../../hack/deploy-overlay.sh", args...).CombinedOutput(); err != nil {
			t.Fatalf("deploy-overlay.sh %v: %v: %s", args, err, b)
		}
		var images []string
		var pdns *appsv1.Deployment
		var svc *corev1.Service
		kinds := map[string]int{}
		for _, doc := range append(kustomize(t, filepath.Join(out, "dns")), kustomize(t, filepath.Join(out, "tp-admission-webhook"))...) {
			if !newer {
				fs, err := arktosFindings(doc)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fs {
					t.Errorf("rendered for Arktos: %s", f)
				}
			}
			var tm struct{ Kind string }
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatal(err)
			}
			kinds[tm.Kind]++
			var pod *corev1.PodSpec
			switch tm.Kind {
			case "Deployment":
				var d appsv1.Deployment
				if err := yaml.Unmarshal(doc, &d); err != nil {
					t.Fatal(err)
				}
				if d.Name == "partition-dns" {
					pdns = &d
				}
				pod = &d.Spec.Template.Spec
			case "DaemonSet":
				var d appsv1.DaemonSet
				if err := yaml.Unmarshal(doc, &d); err != nil {
					t.Fatal(err)
				}
				pod = &d.Spec.Template.Spec
			case "Service":
				var s corev1.Service
				if err := yaml.Unmarshal(doc, &s); err != nil {
					t.Fatal(err)
				}
				if s.Name == "partition-dns" {
					svc = &s
				}
			case "ValidatingWebhookConfiguration":
				var w admissionv1.ValidatingWebhookConfiguration
				if err := yaml.Unmarshal(doc, &w); err != nil {
					t.Fatal(err)
				}
				for _, h := range w.Webhooks {
					if got := base64.StdEncoding.EncodeToString(h.ClientConfig.CABundle); got != base64.StdEncoding.EncodeToString(mustRead(t, ca)) {
						t.Errorf("webhook %s: caBundle is not --webhook-ca's", h.Name)
					}
				}
			}
			if pod != nil {
				for _, c := range append(pod.InitContainers, pod.Containers...) {
					images = append(images, c.Image)
				}
			}
		}
		if kinds["DaemonSet"] != 1 || kinds["Deployment"] != 2 || kinds["ValidatingWebhookConfiguration"] != 1 {
			t.Fatalf("newer=%v: rendered kinds %v, want partition-dns's and the webhook's Deployments, the node cache's DaemonSet, the webhook configuration", newer, kinds)
		}
		for _, img := range images {
			prog, ok := strings.CutPrefix(img, "registry.example:5000/tpkit/")
			if !ok || !strings.HasSuffix(prog, ":v9.8.7-1-gabcdef0") {
				t.Errorf("newer=%v: image %q, want registry.example:5000/tpkit/<program>:v9.8.7-1-gabcdef0", newer, img)
			}
		}
		if n := len(slices.Compact(slices.Sorted(slices.Values(images)))); n != 2 || len(images) < 4 {
			t.Errorf("newer=%v: images %v: want partition-dns (3 containers) and tp-admission-webhook", newer, images)
		}
		if pdns == nil || svc == nil {
			t.Fatalf("newer=%v: no partition-dns Deployment or Service", newer)
		}
		a := pdns.Spec.Template.Spec.Containers[0].Args
		for _, want := range []string{"--tenant-server-kubeconfig=/etc/partition-dns/tp1.kubeconfig,/etc/partition-dns/tp2.kubeconfig,/etc/partition-dns/tp3.kubeconfig",
			"--pod-cidr=10.244.0.0/16", "--trusted-forwarders=10.0.0.0/16"} {
			if !slices.Contains(a, want) {
				t.Errorf("newer=%v: partition-dns args %q lack %q", newer, a, want)
			}
		}
		if svc.Spec.ClusterIP != "10.96.0.10" {
			t.Errorf("newer=%v: Service clusterIP %q", newer, svc.Spec.ClusterIP)
		}
		// --newer builds on deploy/overlays/newer: the field, not Arktos's annotation.
		if _, annotated := pdns.Spec.Template.Annotations["seccomp.security.alpha.kubernetes.io/pod"]; annotated == newer {
			t.Errorf("newer=%v: seccomp annotation present: %v", newer, annotated)
		}
	}

	// Into the checkout: refused, nothing written.
	if b, err := exec.Command("../../hack/deploy-overlay.sh", "../../deploy/mine", "--tag", "x").CombinedOutput(); err == nil || !strings.Contains(string(b), "inside the checkout") {
		t.Errorf("an OUT inside the checkout: %v: %s", err, b)
	}
	if after := gitStatus(t); after != before {
		t.Errorf("git status of deploy/ changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

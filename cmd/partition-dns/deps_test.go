package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoClientset: partition-dns reads two API groups through
// informer.Clients. client-go's clientset would link and register every
// group Kubernetes has (about 8 MiB more resident memory, which counts
// against a CoreDNS-sized limit), so no import path may bring it back.
func TestLinksNoClientset(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "k8s.io/client-go/kubernetes" || strings.HasPrefix(pkg, "k8s.io/client-go/kubernetes/") {
			t.Errorf("partition-dns links %s", pkg)
		}
	}
}

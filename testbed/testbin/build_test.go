package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildRunsTheProgram(t *testing.T) {
	dir, err := Build("./cmd/tp-admission-webhook")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	out, err := exec.Command(filepath.Join(dir, "tp-admission-webhook"), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "-self-signed-dir") {
		t.Errorf("--help does not list the program's flags:\n%s", out)
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build(); err == nil {
		t.Error("Build() with no packages succeeded")
	}
	if _, err := Build("./no/such/package"); err == nil || !strings.Contains(err.Error(), "./no/such/package") {
		t.Errorf("Build of a missing package: %v, want an error naming it", err)
	}
}

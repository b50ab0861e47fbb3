package testbin

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestLabPIDs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pids")
	if got := LabPIDs(path); got != nil {
		t.Errorf("a missing file: %v, want nil", got)
	}
	if err := os.WriteFile(path, []byte("12\n34\n\nnot-a-pid\n56\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := LabPIDs(path); !slices.Equal(got, []int{12, 34, 56}) {
		t.Errorf("LabPIDs: %v, want [12 34 56]", got)
	}
}

func TestCmdline(t *testing.T) {
	got, err := Cmdline(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, os.Args) {
		t.Errorf("Cmdline of this test: %q, want %q", got, os.Args)
	}
	if _, err := Cmdline(-1); err == nil {
		t.Error("Cmdline(-1): no error")
	}
}

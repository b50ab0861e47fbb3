package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestModuleFollowsTheRules is make check-layout inside make test: the
// module's own folders break no rule.
func TestModuleFollowsTheRules(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	t.Chdir(filepath.Dir(strings.TrimSpace(string(out))))
	var report strings.Builder
	broken, err := check(&report)
	if err != nil {
		t.Fatal(err)
	}
	if broken != 0 {
		t.Errorf("%d findings break the layout rules (docs/architecture.md, Layout):\n%s", broken, report.String())
	}
}

// base is a small module that breaks no rule: a program, the package it
// imports, and a core that only an Arktos patch uses.
var base = map[string]string{
	"go.mod":                         "module github.com/tpkit-dev/tpkit\n\ngo 1.26\n",
	"cmd/prog/main.go":               "package main\n\nimport \"github.com/tpkit-dev/tpkit/pkg/used\"\n\nfunc main() { used.Do() }\n",
	"pkg/used/used.go":               "package used\n\n// Do does nothing.\nfunc Do() {}\n",
	"pkg/core/core.go":               "package core\n\n// Config configures nothing.\ntype Config struct{ Name string }\n",
	"test/vendorable/cores_test.go":  "package vendorable\n\nvar cores = []struct{ Path string }{\n\t{Path: \"pkg/core\"},\n}\n",
	"arktos/patches/0001-use.patch":  "+\tname := opts.core.Config.Name\n",
	"testbed/tb/tb.go":               "package tb\n",
	"testbed/tb/testdata/skipped.go": "package broken(\n",
}

func TestCheckFindsBrokenRules(t *testing.T) {
	for _, c := range []struct {
		name   string
		files  map[string]string
		broken int
		line   string // a line the report must hold
	}{
		{"clean", nil, 0, "exported identifiers used only by their own package's tests: 0"},
		{"package no program imports", map[string]string{
			"pkg/idle/idle.go": "package idle\n",
		}, 1, "  pkg/idle (importers: )"},
		{"core without patch use", map[string]string{
			"arktos/patches/0001-use.patch": "+\n",
		}, 1, "  pkg/core.Config"},
		{"patch names a longer name", map[string]string{
			"arktos/patches/0001-use.patch": "+\tc := core.ConfigX{}\n",
		}, 1, "  pkg/core.Config"},
		{"pkg imports the test bed", map[string]string{
			"pkg/used/tb.go": "package used\n\nimport _ \"github.com/tpkit-dev/tpkit/testbed/tb\"\n",
		}, 1, "  pkg/used -> testbed/tb"},
		{"export only its own tests use", map[string]string{
			"pkg/used/helper.go":      "package used\n\n// Helper does nothing.\nfunc Helper() {}\n",
			"pkg/used/helper_test.go": "package used\n\nimport \"testing\"\n\nfunc TestHelper(t *testing.T) { Helper() }\n",
		}, 1, "  pkg/used.Helper"},
		{"export other packages' tests use: listed, not refused", map[string]string{
			"pkg/used/fortests.go":   "package used\n\n// ForTests does nothing.\nfunc ForTests() {}\n",
			"test/other/x_test.go":   "package other\n\nimport (\n\t\"testing\"\n\n\t\"github.com/tpkit-dev/tpkit/pkg/used\"\n)\n\nfunc TestX(t *testing.T) { used.ForTests() }\n",
			"test/other/doc.go":      "package other\n",
			"testbed/tb/fortests.go": "package tb\n\n// Shared serves other packages' tests.\nfunc Shared() {}\n",
			"test/other/y_test.go":   "package other\n\nimport \"github.com/tpkit-dev/tpkit/testbed/tb\"\n\nvar _ = tb.Shared\n",
		}, 0, "used only by tests of other packages (not a failure): 1\n  pkg/used.ForTests\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, files := range []map[string]string{base, c.files} {
				for name, text := range files {
					p := filepath.Join(dir, filepath.FromSlash(name))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			t.Chdir(dir)
			var report strings.Builder
			broken, err := check(&report)
			if err != nil {
				t.Fatal(err)
			}
			if broken != c.broken || !strings.Contains(report.String(), c.line) {
				t.Errorf("broken = %d, want %d, and the report should hold %q:\n%s", broken, c.broken, c.line, report.String())
			}
		})
	}
}

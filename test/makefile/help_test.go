package makefile

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// targets are the Makefile's rules (name: at the start of a line, not a
// variable's :=) and its .PHONY names.
func targets(t *testing.T) (rules, phony []string) {
	t.Helper()
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):([^=]|$)`).FindAllStringSubmatch(string(b), -1) {
		if !slices.Contains(rules, m[1]) {
			rules = append(rules, m[1])
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^\.PHONY:(.*)$`).FindAllStringSubmatch(string(b), -1) {
		phony = append(phony, strings.Fields(m[1])...)
	}
	return rules, phony
}

// TestHelpListsEveryTarget: the real `make help` names each rule as
// "make <target>", and each .PHONY name has a rule.
func TestHelpListsEveryTarget(t *testing.T) {
	rules, phony := targets(t)
	if len(rules) < 20 {
		t.Fatalf("found only %d rules: %v", len(rules), rules)
	}
	cmd := exec.Command("make", "-s", "--no-print-directory", "help")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v: %s", err, out)
	}
	for _, r := range rules {
		if !regexp.MustCompile(`(^|\W)make ` + regexp.QuoteMeta(r) + `(\W|$)`).Match(out) {
			t.Errorf("make help does not name make %s", r)
		}
	}
	for _, p := range phony {
		if !slices.Contains(rules, p) {
			t.Errorf(".PHONY names %s, which is no target", p)
		}
	}
}

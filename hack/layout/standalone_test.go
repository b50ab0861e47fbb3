package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// namesShared matches a line that names the shared folder the developers
// keep beside their checkout (reference material, never part of tpkit): as a
// relative path, as this machine's absolute path, or as the parts of a Go
// filepath.Join. The patterns are written so that this file matches none.
var namesShared = regexp.MustCompile(`\.\./shared\b|/work/share[d]\b|"\.\."\s*,\s*"shared"`)

// mayNameShared are the files that may name it: the developers' guide,
// which is about the developers' machine rather than the repository.
var mayNameShared = map[string]bool{"DEVELOPERS.md": true}

// TestNothingNamesShared: tpkit stands on its own. A clone has no shared
// folder beside it, so no tracked file but DEVELOPERS.md may name it: the
// lab script, the bench's floor and the recordings are the repository's own
// (hack/arktos-lab.sh, test/bench/udp/udpfloor, testbed/faketp/testdata).
func TestNothingNamesShared(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	files, err := trackedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("%d files in %s; expected the whole module", len(files), root)
	}
	var found []string
	for _, f := range files {
		if mayNameShared[f] {
			continue
		}
		lines, err := sharedLines(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			found = append(found, f+":"+l)
		}
	}
	if len(found) > 0 {
		t.Errorf("%d lines name the shared folder beside the checkout, which a clone of tpkit does not have; "+
			"point them at the repository's own files:\n%s", len(found), strings.Join(found, "\n"))
	}
}

// trackedFiles lists git's tracked files under root, slash-separated and
// relative to it; where git cannot tell (no git, or a copy without .git),
// every file under root but .git.
func trackedFiles(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f == "" {
				continue
			}
			// A file deleted in the working tree is not there to read.
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err == nil {
				files = append(files, f)
			}
		}
		return files, nil
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

// sharedLines returns "LINE: text" for every line of the file at path that
// names the shared folder. A symlink is read as its target's name.
func sharedLines(path string) ([]string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	var b []byte
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return nil, err
		}
		b = []byte(target)
	} else if fi.Mode().IsRegular() {
		if b, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	}
	var out []string
	for i, line := range bytes.Split(b, []byte("\n")) {
		if namesShared.Match(line) {
			out = append(out, fmt.Sprintf("%d: %s", i+1, bytes.TrimSpace(line)))
		}
	}
	return out, nil
}

func TestNamesShared(t *testing.T) {
	dots := ".." // so that this file names nothing itself
	for _, c := range []struct {
		line string
		want bool
	}{
		{"LAB=${ARKTOS_LAB:-$root/" + dots + "/shared/arktos/lab.sh}", true},
		{"# see " + dots + "/shared.", true},
		{`d = "` + dots + "/" + dots + "/" + dots + `/shared/arktos"`, true},
		{"LAB_SH=/work/" + "shared/arktos/lab.sh", true},
		{`lab = filepath.Join(root, "` + dots + `", "shared", "arktos", "lab.sh")`, true},
		{"LAB=${ARKTOS_LAB:-$root/hack/arktos-lab.sh}", false},
		{"a shared name hash; " + dots + "/sharedfoo", false},
		{`filepath.Join(root, "shared")`, false},
	} {
		if got := namesShared.MatchString(c.line); got != c.want {
			t.Errorf("namesShared.MatchString(%q) = %v, want %v", c.line, got, c.want)
		}
	}
}

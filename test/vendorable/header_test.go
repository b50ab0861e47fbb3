package vendorable

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// coreHeader is the license header every non-test file of a core starts
// with: the cores become files of an Arktos tree
// (staging/src/github.com/tpkit-dev/tpkit, arktos/vendor-cores.sh), where
// Arktos's verify-boilerplate checks every Go file outside vendor/. Its
// hack/boilerplate/boilerplate.py accepts a file with an "Authors of Arktos"
// copyright line not below a Kubernetes one (a file Arktos added); the rest
// is Arktos's Apache 2.0 text, and tpkit's copyright line says whose the file
// is, as on the series' new files.
var coreHeader = regexp.MustCompile(`^/\*
Copyright \d{4} Authors of Arktos\.
Copyright \d{4} Authors of tpkit\.

Licensed under the Apache License, Version 2\.0 \(the "License"\);
you may not use this file except in compliance with the License\.
You may obtain a copy of the License at

    http://www\.apache\.org/licenses/LICENSE-2\.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied\.
See the License for the specific language governing permissions and
limitations under the License\.
\*/

`)

// headerProblem says what is wrong with src's license header, or "".
func headerProblem(src string) string {
	if coreHeader.MatchString(src) {
		return ""
	}
	first := src
	if i := strings.Index(first, "\n"); i >= 0 {
		first = first[:i]
	}
	switch {
	case first != "/*":
		return "does not start with the license header (first line " + strings.TrimSpace(first) + ")"
	case strings.Contains(src[:min(len(src), 200)], "The Kubernetes Authors"):
		return "has a Kubernetes copyright line: Arktos's boilerplate check then wants the Kubernetes header, unchanged"
	default:
		return "has a license header that is not Arktos's with tpkit's copyright line"
	}
}

func TestCoresCarryLicenseHeader(t *testing.T) {
	root := moduleRoot(t)
	n := 0
	for _, c := range cores {
		files, err := filepath.Glob(filepath.Join(root, c.Path, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			n++
			if p := headerProblem(string(b)); p != "" {
				rel, _ := filepath.Rel(root, f)
				t.Errorf("%s %s", rel, p)
			}
		}
	}
	if n == 0 {
		t.Fatal("no core files found")
	}
}

func TestHeaderProblem(t *testing.T) {
	good := "/*\nCopyright 2026 Authors of Arktos.\nCopyright 2026 Authors of tpkit.\n\n" +
		"Licensed under the Apache License, Version 2.0 (the \"License\");\n" +
		"you may not use this file except in compliance with the License.\nYou may obtain a copy of the License at\n\n" +
		"    http://www.apache.org/licenses/LICENSE-2.0\n\n" +
		"Unless required by applicable law or agreed to in writing, software\n" +
		"distributed under the License is distributed on an \"AS IS\" BASIS,\n" +
		"WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\n" +
		"See the License for the specific language governing permissions and\nlimitations under the License.\n*/\n\n"
	tests := []struct {
		name, src, want string
	}{
		{"arktos and tpkit", good + "package x\n", ""},
		{"no header", "// Package x does things.\npackage x\n", "does not start"},
		{"kubernetes header", strings.Replace(good, "Copyright 2026 Authors of Arktos.", "Copyright 2026 The Kubernetes Authors.", 1) + "package x\n", "Kubernetes copyright"},
		{"no tpkit line", strings.Replace(good, "Copyright 2026 Authors of tpkit.\n", "", 1) + "package x\n", "not Arktos's"},
		{"another license", strings.Replace(good, "Apache License, Version 2.0", "MIT License", 1) + "package x\n", "not Arktos's"},
		{"no blank line after", strings.TrimSuffix(good, "\n") + "package x\n", "not Arktos's"},
	}
	for _, tt := range tests {
		got := headerProblem(tt.src)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: headerProblem = %q, want %q", tt.name, got, tt.want)
		}
	}
}

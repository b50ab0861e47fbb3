package vendorable

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// MinLang is the Go release the cores are written for, language and
// standard library: Arktos 6685f14 is built with Go 1.13.9, and its go.mod
// says go 1.13. So no generics, no any, no min or max, no range over
// integers, no overlapping embedded interfaces (Go 1.14), and nothing the
// standard library added after Go 1.13 (net/netip, strings.Cut,
// atomic.Uint64, io.ReadAll, ...). The language is checked by compiling the
// cores in a module whose go line is MinLang (TestCoresCompileAtMinLang,
// TestCoresBuildWithMinGo), the standard library by TestCoresUseGo113Std.
const MinLang = "1.13"

// MinGo is the oldest Go toolchain that can be installed here (Debian
// bookworm's golang-1.19-go; no Debian release packages Go 1.13), so that
// TestCoresBuildWithMinGo runs a real older toolchain, with its older
// standard library, not only a newer one told to pretend.
const MinGo = "1.19"

const module = "github.com/tpkit-dev/tpkit"

// core is one vendorable package, relative to the module root.
type core struct {
	Path    string
	Allowed []allowed
}

// allowed is a module a core may import, and why.
type allowed struct {
	Module, Why string
}

// TestCoreDependencies: go list -deps of each core lists only the standard
// library, other cores and the modules cores_test.go allows it.
func TestCoreDependencies(t *testing.T) {
	root := moduleRoot(t)
	byPath := map[string]core{} // import path -> core
	for _, c := range cores {
		byPath[module+"/"+c.Path] = c
	}
	for _, c := range cores {
		t.Run(c.Path, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Standard}}\t{{join .Imports \" \"}}", "./"+c.Path)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps ./%s: %v\n%s", c.Path, err, out)
			}
			std := map[string]bool{"C": true} // cgo's pseudo-package, for std's os/user and net
			imports := map[string][]string{}
			// TrimRight, not TrimSpace: a package without imports ends its
			// line with the tab before its empty import list.
			for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
				f := strings.Split(line, "\t")
				if len(f) != 3 {
					t.Fatalf("go list line %q", line)
				}
				std[f[0]] = std[f[0]] || f[1] == "true"
				imports[f[0]] = strings.Fields(f[2])
			}
			// Every import a core makes (this one and the cores it uses) is
			// the standard library, a core, or allowed for that core; what an
			// allowed module imports comes with it.
			for pkg, imps := range imports {
				from, isCore := byPath[pkg]
				if !isCore {
					continue
				}
				for _, imp := range imps {
					if _, core := byPath[imp]; core || std[imp] || allows(from.Allowed, imp) {
						continue
					}
					t.Errorf("%s imports %s; move the code that needs it to the core's adapter, or allow it in cores_test.go with a reason", pkg, imp)
				}
			}
		})
	}
}

func allows(list []allowed, pkg string) bool {
	for _, a := range list {
		if pkg == a.Module || strings.HasPrefix(pkg, a.Module+"/") {
			return true
		}
	}
	return false
}

// TestCoresBuildWithMinGo vets (type checks, compiles, vets) the cores'
// non-test files with Go MinGo itself, in a throwaway module whose go line is
// MinLang, with bbolt at Arktos's pin and apimachinery of Arktos's line.
func TestCoresBuildWithMinGo(t *testing.T) {
	goMin := minGo(t)
	dir := coresModule(t)
	cmd := exec.Command(goMin, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go%s vet of the cores at language go%s: %v\n%s", MinGo, MinLang, err, out)
	}
}

// TestCoresCompileAtMinLang compiles the cores' non-test files with the Go
// that runs the tests, in the same kind of module: its go line MinLang makes
// the compiler refuse every language feature newer than Go MinLang
// (TestLanguageCheckRejectsNewerGo shows that it does). -race, as make test
// builds: the standard library and the shared dependencies are then in the
// build cache, where a plain build compiled them again (15 of this test's
// 17 s from a cold cache).
func TestCoresCompileAtMinLang(t *testing.T) {
	dir := coresModule(t)
	cmd := exec.Command("go", "build", "-race", "-gcflags=-e", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the cores at language go%s: %v\n%s", MinLang, err, out)
	}
}

// TestLanguageCheckRejectsNewerGo: the check of TestCoresCompileAtMinLang can
// fail. testdata/newlang, compiled in a module whose go line is MinLang,
// must fail with the error each of its "want:" comments names, on that line
// (any, generics, min, range over an int, a slice to array pointer
// conversion, overlapping embedded interfaces).
func TestLanguageCheckRejectsNewerGo(t *testing.T) {
	src := filepath.Join(moduleRoot(t), "test", "vendorable", "testdata", "newlang", "newlang.go")
	dir := t.TempDir()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{
		"go.mod":     "module example.com/newlang\n\ngo " + MinLang + "\n",
		"newlang.go": string(b),
	})
	cmd := exec.Command("go", "build", "-gcflags=-e", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOTOOLCHAIN=local", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("go build of testdata/newlang at go%s succeeded:\n%s", MinLang, out)
	}
	if !strings.Contains(string(out), "-lang was set to go"+MinLang) {
		t.Errorf("the compiler did not say it used -lang=go%s:\n%s", MinLang, out)
	}
	wants := wantComments(t, src)
	if len(wants) < 6 {
		t.Fatalf("only %d want comments in newlang.go", len(wants))
	}
	lines := strings.Split(string(out), "\n")
	for line, text := range wants {
		prefix := fmt.Sprintf("newlang.go:%d:", line)
		ok := false
		for _, l := range lines {
			if strings.Contains(l, prefix) && strings.Contains(l, text) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("no error %q at %s; the compiler said:\n%s", text, prefix, out)
		}
	}
}

// coresModule copies the cores' non-test files into a throwaway module
// whose go line is MinLang and which requires bbolt at Arktos's pin and
// apimachinery of Arktos's line, and returns its directory.
func coresModule(t *testing.T) string {
	t.Helper()
	root := moduleRoot(t)
	dir := t.TempDir()
	for _, c := range cores {
		files, err := filepath.Glob(filepath.Join(root, c.Path, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, c.Path), 0o755); err != nil {
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
			if err := os.WriteFile(filepath.Join(dir, c.Path, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeFiles(t, dir, map[string]string{
		"go.mod": "module " + module + "\n\ngo " + MinLang + "\n\nrequire (\n\tgo.etcd.io/bbolt " + bboltArktos + "\n\tk8s.io/apimachinery " + apimachineryMinGo + "\n)\n",
		// bbolt v1.3.3's go.sum lines, as the Go checksum database has
		// them; -mod=mod adds apimachinery's graph, checked against the
		// same database through the module proxy.
		"go.sum": "go.etcd.io/bbolt v1.3.3 h1:MUGmc65QhB3pIlaQ5bB4LwqSj6GIonVJXpZiaKNyaKk=\n" +
			"go.etcd.io/bbolt v1.3.3/go.mod h1:IbVyRI1SCnLcuJnV2u8VeU0CEYM7e686BmAb1XKL+uU=\n",
	})
	return dir
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// minGo finds Go MinGo: go<MinGo> on PATH, or Debian's golang-<MinGo>-go.
func minGo(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"go" + MinGo, "/usr/lib/go-" + MinGo + "/bin/go"} {
		if path, err := exec.LookPath(p); err == nil {
			out, err := exec.Command(path, "env", "GOVERSION").Output()
			if err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "go"+MinGo) {
				return path
			}
		}
	}
	t.Fatalf("Go %s is not installed: apt-get install -y golang-%s-go (or ./hack/ensure-tools.sh go%s); it proves the cores build with the oldest Go docs/vendoring.md names", MinGo, MinGo, MinGo)
	return ""
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

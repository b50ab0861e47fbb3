package vendorable

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/internal/testbin"
)

// MinGo is the oldest Go toolchain the cores build with (docs/vendoring.md):
// Debian bookworm's golang-1.19-go, so that the check below runs a real
// toolchain of that version, not a newer one told to pretend.
const MinGo = "1.19"

// MinLang is the language version the cores are written in: go1.16, the
// version Go compiles vendored packages at in a tree whose go.mod says
// go 1.13 (Arktos's) and whose vendor/modules.txt records no versions. So
// no generics, no any, no newer syntax.
const MinLang = "1.16"

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
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
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

// TestCoresBuildWithMinGo copies the cores' sources (not their tests) into
// a throwaway module whose go directive is MinLang, with bbolt at Arktos's
// pin, and runs go vet (type checks, compiles, vets) with Go MinGo itself.
func TestCoresBuildWithMinGo(t *testing.T) {
	goMin := minGo(t)
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
	gomod := "module " + module + "\n\ngo " + MinLang + "\n\nrequire (\n\tgo.etcd.io/bbolt " + bboltArktos + "\n\tk8s.io/apimachinery " + apimachineryMinGo + "\n)\n"
	// bbolt v1.3.3's go.sum lines, as the Go checksum database has them;
	// -mod=mod adds apimachinery's graph, checked against the same
	// database through the module proxy.
	gosum := "go.etcd.io/bbolt v1.3.3 h1:MUGmc65QhB3pIlaQ5bB4LwqSj6GIonVJXpZiaKNyaKk=\n" +
		"go.etcd.io/bbolt v1.3.3/go.mod h1:IbVyRI1SCnLcuJnV2u8VeU0CEYM7e686BmAb1XKL+uU=\n"
	for name, content := range map[string]string{"go.mod": gomod, "go.sum": gosum} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goMin, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go%s vet of the cores at language go%s: %v\n%s", MinGo, MinLang, err, out)
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

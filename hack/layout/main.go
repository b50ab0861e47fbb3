// Command layout checks the house rules of tpkit's folders (issue 38,
// docs/architecture.md "Layout") and prints what it finds:
//
//   - pkg/ holds the programs' packages and the vendorable cores only: every
//     package under pkg/ is imported (through non-test files) by a program in
//     cmd/ or is a core (test/vendorable/cores_test.go);
//   - internal/ holds only what programs use;
//   - no non-test file under pkg/ or internal/ imports testbed/ or test/;
//   - no exported package-level identifier of pkg/, internal/ or testbed/ is
//     used only by its own package's tests (those used only by other
//     packages' tests are listed, not refused). A use is a selector (pkg.Name) in
//     any other Go file of the module, tests and build-tagged files
//     included, or pkg.Name in an Arktos patch (arktos/patches), or the name
//     in the package's own non-test files. Methods and fields are not checked.
//
// Run it from the module root: go run ./hack/layout (make check-layout). It
// exits 1 when a rule is broken.
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

const module = "github.com/tpkit-dev/tpkit"

// file is one parsed Go file.
type file struct {
	pkgDir string // relative to the module root
	test   bool
	ast    *ast.File
	// imports: import path -> the name the file uses for it
	imports map[string]string
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(2)
	}
}

func run() error {
	files, err := parseModule()
	if err != nil {
		return err
	}
	progDeps, err := goList("-deps", "./cmd/...")
	if err != nil {
		return err
	}
	cores, err := coreList()
	if err != nil {
		return err
	}
	broken := 0
	report := func(title string, lines []string) {
		fmt.Printf("%s: %d\n", title, len(lines))
		for _, l := range lines {
			fmt.Println("  " + l)
		}
	}
	dirs := map[string]bool{}
	for _, f := range files {
		dirs[f.pkgDir] = true
	}
	var libDirs []string
	for d := range dirs {
		if under(d, "pkg") || under(d, "internal") || under(d, "testbed") {
			libDirs = append(libDirs, d)
		}
	}
	sort.Strings(libDirs)

	// 1. pkg/ and internal/: each package a program's or a core.
	var notShipped []string
	for _, d := range libDirs {
		if !(under(d, "pkg") || under(d, "internal")) || !hasNonTest(files, d) {
			continue
		}
		if !progDeps[module+"/"+d] && !cores[d] {
			notShipped = append(notShipped, d+" (importers: "+strings.Join(importers(files, d), ", ")+")")
		}
	}
	report("packages in pkg/ or internal/ that no program imports and that are no core", notShipped)
	broken += len(notShipped)

	// 2. No arrow from pkg/ or internal/ into the test bed or the tests.
	var back []string
	for _, f := range files {
		if f.test || !(under(f.pkgDir, "pkg") || under(f.pkgDir, "internal")) {
			continue
		}
		for imp := range f.imports {
			rel := strings.TrimPrefix(imp, module+"/")
			if under(rel, "testbed") || under(rel, "test") {
				back = append(back, fmt.Sprintf("%s -> %s", f.pkgDir, rel))
			}
		}
	}
	back = uniq(back)
	report("imports from non-test files of pkg/ or internal/ into testbed/ or test/", back)
	broken += len(back)

	// 3. Exported identifiers only their own tests use.
	patches, err := patchText()
	if err != nil {
		return err
	}
	var idle, testsOnly []string
	for _, d := range libDirs {
		for _, id := range exported(files, d) {
			if usedInside(files, d, id) || inPatches(patches, files, d, id) || usedOutside(files, d, id, false) {
				continue
			}
			if usedOutside(files, d, id, true) {
				testsOnly = append(testsOnly, d+"."+id)
			} else {
				idle = append(idle, d+"."+id)
			}
		}
	}
	report("exported identifiers used only by their own package's tests", idle)
	broken += len(idle)
	// Shown, not refused: a test bed's helper may serve other packages'
	// tests only.
	report("exported identifiers of pkg/ or internal/ used only by tests of other packages (not a failure)", keep(testsOnly, func(s string) bool { return !under(s, "testbed") }))
	if broken > 0 {
		os.Exit(1)
	}
	return nil
}

func under(rel, top string) bool { return rel == top || strings.HasPrefix(rel, top+"/") }

// parseModule parses every Go file of the module, whatever its build tags.
func parseModule() ([]*file, error) {
	var out []*file
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != "." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		a, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		f := &file{pkgDir: filepath.ToSlash(filepath.Dir(p)), test: strings.HasSuffix(p, "_test.go"), ast: a, imports: map[string]string{}}
		for _, is := range a.Imports {
			ip, _ := strconv.Unquote(is.Path.Value)
			name := path.Base(ip)
			if is.Name != nil {
				name = is.Name.Name
			}
			f.imports[ip] = name
		}
		out = append(out, f)
		return nil
	})
	return out, err
}

// goList returns the import paths go list prints for args.
func goList(args ...string) (map[string]bool, error) {
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", strings.Join(args, " "), err)
	}
	m := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		m[l] = true
	}
	return m, nil
}

// coreList reads the cores' paths from test/vendorable/cores_test.go, as
// arktos/vendor-cores.sh does.
func coreList() (map[string]bool, error) {
	f, err := os.Open("test/vendorable/cores_test.go")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	re := regexp.MustCompile(`^\s*\{Path: "(pkg[^"]*)"`)
	m := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if g := re.FindStringSubmatch(s.Text()); g != nil {
			m[g[1]] = true
		}
	}
	return m, s.Err()
}

func patchText() (string, error) {
	ps, err := filepath.Glob("arktos/patches/*.patch")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range ps {
		data, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		b.Write(data)
	}
	return b.String(), nil
}

func hasNonTest(files []*file, dir string) bool {
	for _, f := range files {
		if f.pkgDir == dir && !f.test {
			return true
		}
	}
	return false
}

// importers lists the directories whose files import dir, tests marked.
func importers(files []*file, dir string) []string {
	var out []string
	for _, f := range files {
		if _, ok := f.imports[module+"/"+dir]; ok && f.pkgDir != dir {
			s := f.pkgDir
			if f.test {
				s += " (test)"
			}
			out = append(out, s)
		}
	}
	return uniq(out)
}

// exported lists dir's exported package-level names (non-test files).
func exported(files []*file, dir string) []string {
	var out []string
	for _, f := range files {
		if f.pkgDir != dir || f.test || f.ast.Name.Name == "main" {
			continue
		}
		for _, d := range f.ast.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					out = append(out, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							out = append(out, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								out = append(out, n.Name)
							}
						}
					}
				}
			}
		}
	}
	return uniq(out)
}

// usedOutside: a file of another directory selects dir.id; with tests
// false, a non-test file.
func usedOutside(files []*file, dir, id string, tests bool) bool {
	for _, f := range files {
		if f.pkgDir == dir || f.test != tests {
			continue
		}
		name, ok := f.imports[module+"/"+dir]
		if !ok {
			continue
		}
		found := false
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if se, ok := n.(*ast.SelectorExpr); ok && se.Sel.Name == id {
				if x, ok := se.X.(*ast.Ident); ok && x.Name == name {
					found = true
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// usedInside: dir's own non-test files name id other than where they
// declare it.
func usedInside(files []*file, dir, id string) bool {
	for _, f := range files {
		if f.pkgDir != dir || f.test {
			continue
		}
		declared := map[*ast.Ident]bool{}
		for _, d := range f.ast.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declared[d.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declared[s.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declared[n] = true
						}
					}
				}
			}
		}
		// Names that are not the package-level id: fields, methods,
		// composite literals' keys.
		ast.Inspect(f.ast, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				for _, i := range n.Names {
					declared[i] = true
				}
			case *ast.FuncDecl:
				declared[n.Name] = true
			case *ast.KeyValueExpr:
				if i, ok := n.Key.(*ast.Ident); ok {
					declared[i] = true
				}
			}
			return true
		})
		found := false
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if se, ok := n.(*ast.SelectorExpr); ok {
				// x.id is a field or method, not the package-level id
				ast.Inspect(se.X, func(m ast.Node) bool {
					if i, ok := m.(*ast.Ident); ok && i.Name == id && !declared[i] {
						found = true
					}
					return !found
				})
				return false
			}
			if i, ok := n.(*ast.Ident); ok && i.Name == id && !declared[i] {
				found = true
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// inPatches: an Arktos patch names pkgname.id, pkgname being the package's
// own name.
func inPatches(patches string, files []*file, dir, id string) bool {
	name := ""
	for _, f := range files {
		if f.pkgDir == dir && !f.test {
			name = f.ast.Name.Name
			break
		}
	}
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name+"."+id) + `\b`).MatchString(patches)
}

func keep(s []string, f func(string) bool) []string {
	var out []string
	for _, v := range s {
		if f(v) {
			out = append(out, v)
		}
	}
	return out
}

func uniq(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

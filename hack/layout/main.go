// Command layout checks the house rules of tpkit's folders (the layout clean-up that moved the test bed out of pkg/,
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
// exits 1 when a rule is broken. make test runs the same check as a test
// (layout_test.go), inside go test, where it shares the tests' build.
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
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
	// selects: every "x.Sel" the file writes with x a plain name
	selects map[string]bool
	// names: the names a non-test file uses other than where it declares
	// them (see usedInside); nil for a test file
	names map[string]bool
}

func main() {
	broken, err := check(os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(2)
	}
	if broken > 0 {
		os.Exit(1)
	}
}

// check checks the module in the current directory, writes what it finds to
// w and returns how many findings break a rule.
func check(w io.Writer) (broken int, err error) {
	files, err := parseModule()
	if err != nil {
		return 0, err
	}
	progDeps, err := goList("-deps", "./cmd/...")
	if err != nil {
		return 0, err
	}
	cores, err := coreList()
	if err != nil {
		return 0, err
	}
	report := func(title string, lines []string) {
		fmt.Fprintf(w, "%s: %d\n", title, len(lines))
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
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
	patches, err := patchNames()
	if err != nil {
		return 0, err
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
	return broken, nil
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
		f.selects = selectors(a)
		if !f.test { // usedInside reads non-test files only
			f.names = usedNames(a)
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

// patchNames lists every "a.b" the Arktos patches write: two words joined
// by one dot, each whole (so pkg.Name, not pkg.NameX, names Name).
func patchNames() (map[string]bool, error) {
	ps, err := filepath.Glob("arktos/patches/*.patch")
	if err != nil {
		return nil, err
	}
	dotted := regexp.MustCompile(`\w+(?:\.\w+)+`) // "a.b.c"
	m := map[string]bool{}
	for _, p := range ps {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for _, chain := range dotted.FindAllString(string(data), -1) {
			words := strings.Split(chain, ".")
			for i := 1; i < len(words); i++ {
				m[words[i-1]+"."+words[i]] = true
			}
		}
	}
	return m, nil
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
		if name, ok := f.imports[module+"/"+dir]; ok && f.selects[name+"."+id] {
			return true
		}
	}
	return false
}

// selectors lists the "x.Sel" selections of a, x being a plain name.
func selectors(a *ast.File) map[string]bool {
	m := map[string]bool{}
	ast.Inspect(a, func(n ast.Node) bool {
		if se, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := se.X.(*ast.Ident); ok {
				m[x.Name+"."+se.Sel.Name] = true
			}
		}
		return true
	})
	return m
}

// usedInside: dir's own non-test files name id other than where they
// declare it.
func usedInside(files []*file, dir, id string) bool {
	for _, f := range files {
		if f.pkgDir == dir && !f.test && f.names[id] {
			return true
		}
	}
	return false
}

// usedNames lists the names a uses other than where it declares them: not a
// package-level declaration's name, a field's or a method's, a composite
// literal's key, or the selected name of x.Sel (a field or method, not the
// package-level name).
func usedNames(a *ast.File) map[string]bool {
	declared := map[*ast.Ident]bool{}
	for _, d := range a.Decls {
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
	ast.Inspect(a, func(n ast.Node) bool {
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
	m := map[string]bool{}
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		if se, ok := n.(*ast.SelectorExpr); ok {
			ast.Inspect(se.X, walk)
			return false
		}
		if i, ok := n.(*ast.Ident); ok && !declared[i] {
			m[i.Name] = true
		}
		return true
	}
	ast.Inspect(a, walk)
	return m
}

// inPatches: an Arktos patch names pkgname.id, pkgname being the package's
// own name.
func inPatches(patches map[string]bool, files []*file, dir, id string) bool {
	for _, f := range files {
		if f.pkgDir == dir && !f.test {
			return patches[f.ast.Name.Name+"."+id]
		}
	}
	return false
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

package vendorable

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// This file is the standard-library half of the Go 1.13 check: what vet's
// stdversion analyzer does, but against a fixed target (go1.13) instead of
// the file's own Go version, and with the standard library only. The
// toolchain's $GOROOT/api/go1.N.txt files list every exported symbol when it
// was added; a core's non-test file must not use one added after MinStd.

// MinStd is the minor version of MinLang: the Go release whose standard
// library the cores may use.
const MinStd = 13

// stdAPI is what the toolchain's api files say: the Go 1.x minor version
// that added each standard package and each of its symbols.
type stdAPI struct {
	pkgs map[string]int            // import path -> first minor version with an API line
	syms map[string]map[string]int // import path -> "Cut", "Uint64.Add", "Info.FileVersions" -> minor version
}

// since is when sym of pkg was added, and whether the api files list it.
func (a *stdAPI) since(pkg, sym string) (int, bool) {
	v, ok := a.syms[pkg][sym]
	return v, ok
}

// readStdAPI reads every $GOROOT/api/go1*.txt. A symbol's version is the
// first file that lists it on any platform (a line may carry a
// "(GOOS-GOARCH)" qualifier), as vet's stdversion does.
func readStdAPI(goroot string) (*stdAPI, error) {
	files, err := filepath.Glob(filepath.Join(goroot, "api", "go1*.txt"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no go1*.txt in %s/api", goroot)
	}
	a := &stdAPI{pkgs: map[string]int{}, syms: map[string]map[string]int{}}
	newest := 0
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".txt")
		minor := 0 // go1.txt
		if base != "go1" {
			if minor, err = strconv.Atoi(strings.TrimPrefix(base, "go1.")); err != nil {
				return nil, fmt.Errorf("api file %s: not go1.N.txt", f)
			}
		}
		if minor > newest {
			newest = minor
		}
		if err := a.readFile(f, minor); err != nil {
			return nil, err
		}
	}
	if newest <= MinStd {
		return nil, fmt.Errorf("the newest api file in %s/api is go1.%d.txt; expected the toolchain's own", goroot, newest)
	}
	return a, nil
}

func (a *stdAPI) readFile(name string, minor int) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pkg, sym, err := parseAPILine(line)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", name, n, err)
		}
		if v, ok := a.pkgs[pkg]; !ok || minor < v {
			a.pkgs[pkg] = minor
		}
		if sym == "" {
			continue
		}
		m := a.syms[pkg]
		if m == nil {
			m = map[string]int{}
			a.syms[pkg] = m
		}
		if v, ok := m[sym]; !ok || minor < v {
			m[sym] = minor
		}
	}
	return sc.Err()
}

// parseAPILine parses one api file line into the package's import path and
// the symbol's name as symbolsOf spells it: "Name" for a package-level func,
// type, var or const; "Type.Name" for a method (either receiver), a struct
// field (an embedded one by its type's name) or an interface's method. sym
// is "" for lines that name no symbol ("unexported methods").
//
//	pkg strings, func Cut(string, string) (string, string, bool)
//	pkg sync/atomic, method (*Uint64) Add(uint64) uint64
//	pkg sync/atomic, method (*Pointer[$0]) Load() *$0
//	pkg go/types, type Info struct, FileVersions map[*ast.File]string
//	pkg syscall (linux-386), func Setegid(int) error
func parseAPILine(line string) (pkg, sym string, err error) {
	rest, ok := strings.CutPrefix(line, "pkg ")
	if !ok {
		return "", "", fmt.Errorf("line %q does not start with pkg", line)
	}
	i := strings.Index(rest, ", ")
	if i < 0 {
		return "", "", fmt.Errorf("line %q: no declaration", line)
	}
	pkg, decl := rest[:i], rest[i+2:]
	if j := strings.IndexByte(pkg, ' '); j >= 0 { // "syscall (linux-386)"
		pkg = pkg[:j]
	}
	if j := strings.Index(decl, " #"); j >= 0 { // "... #73794": the proposal
		decl = decl[:j]
	}
	kind, decl, ok := strings.Cut(decl, " ")
	if !ok {
		return "", "", fmt.Errorf("line %q: no name", line)
	}
	switch kind {
	case "func", "var", "const":
		return pkg, ident(decl), nil
	case "method":
		// "(*Uint64) Add(uint64) uint64", "(Addr) Is4() bool"
		recv, m, ok := strings.Cut(strings.TrimPrefix(decl, "("), ") ")
		if !ok {
			return "", "", fmt.Errorf("line %q: bad receiver", line)
		}
		return pkg, ident(strings.TrimPrefix(recv, "*")) + "." + ident(m), nil
	case "type":
		name := ident(decl)
		decl = skipTypeParams(decl[len(name):])
		// " struct", " interface { ... }", " int": the type itself;
		// " struct, Field T" and " interface, M(...)": one member.
		for _, k := range []string{" struct, ", " interface, "} {
			member, ok := strings.CutPrefix(decl, k)
			if !ok {
				continue
			}
			switch {
			case member == "unexported methods":
				return pkg, "", nil
			case strings.HasPrefix(member, "embedded "):
				t := strings.TrimPrefix(strings.TrimPrefix(member, "embedded "), "*")
				if j := strings.LastIndexByte(t, '.'); j >= 0 { // "embedded sync.Mutex"
					t = t[j+1:]
				}
				return pkg, name + "." + ident(t), nil
			default:
				return pkg, name + "." + ident(member), nil
			}
		}
		return pkg, name, nil
	}
	return "", "", fmt.Errorf("line %q: unknown kind %q", line, kind)
}

// ident is the Go identifier s starts with.
func ident(s string) string {
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r > 0x7f) {
			return s[:i]
		}
	}
	return s
}

// skipTypeParams drops a leading "[$0 any, ...]".
func skipTypeParams(s string) string {
	if !strings.HasPrefix(s, "[") {
		return s
	}
	depth := 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return s[i+1:]
			}
		}
	}
	return s
}

// stdFinding is one use of something the standard library added after
// go1.MinStd.
type stdFinding struct {
	Pos    token.Position
	Symbol string // "strings.Cut", "atomic.Uint64.Add", or an import path in quotes
	Since  int    // Go 1.x minor version that added it
}

func (f stdFinding) String() string {
	return fmt.Sprintf("%s:%d:%d: %s requires go1.%d (the cores use go1.%d's standard library)",
		f.Pos.Filename, f.Pos.Line, f.Pos.Column, f.Symbol, f.Since, MinStd)
}

// stdChecker type-checks packages with the toolchain's export data and
// reports their uses of standard-library symbols newer than go1.MinStd.
type stdChecker struct {
	api    *stdAPI
	fset   *token.FileSet
	export map[string]string // import path -> export data file (go list -export)
	imp    types.Importer
	// objs maps each exported object of the standard packages walked so
	// far to its symbol and version. An object reached by two paths (an
	// alias: os.PathError is fs.PathError since Go 1.16) keeps the older.
	objs   map[types.Object]stdSym
	walked map[*types.Package]bool
}

type stdSym struct {
	name  string // "Cut", "Uint64.Add"
	minor int
}

func newStdChecker(t *testing.T, root string, api *stdAPI, pkgs ...string) *stdChecker {
	t.Helper()
	c := &stdChecker{api: api, fset: token.NewFileSet(), export: map[string]string{},
		objs: map[types.Object]stdSym{}, walked: map[*types.Package]bool{}}
	// One go list for every package and its dependencies: it builds what
	// is not in the build cache and names each export data file. -race is
	// make test's build setting, so the export data is already there; the
	// exported API is the same (about 26 s of a cold make test saved).
	args := append([]string{"list", "-race", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderrOf(err))
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, file, _ := strings.Cut(line, "\t")
		c.export[path] = file
	}
	c.imp = importer.ForCompiler(c.fset, "gc", func(path string) (io.ReadCloser, error) {
		file := c.export[path]
		if file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	return c
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

// checkDir type-checks the named files of dir as one package and returns
// every use of a standard-library symbol or package newer than go1.MinStd.
func (c *stdChecker) checkDir(dir string, names []string) ([]stdFinding, error) {
	var files []*ast.File
	for _, n := range names {
		f, err := parser.ParseFile(c.fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	var typeErrs []string
	conf := types.Config{Importer: c.imp, Error: func(err error) { typeErrs = append(typeErrs, err.Error()) }}
	pkg, _ := conf.Check(files[0].Name.Name, c.fset, files, info)
	if len(typeErrs) > 0 {
		return nil, fmt.Errorf("type errors in %s:\n%s", dir, strings.Join(typeErrs, "\n"))
	}

	var found []stdFinding
	// Imports first: a package the standard library did not have in
	// go1.MinStd (net/netip, io/fs, embed) fails as a whole.
	for _, f := range files {
		for _, spec := range f.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			if !isStd(path) || path == "unsafe" || path == "C" {
				continue // unsafe's additions are builtins, which -lang checks
			}
			v, ok := c.api.pkgs[path]
			if !ok {
				return nil, fmt.Errorf("%s: standard package %q is in no api file, so its version is unknown", c.fset.Position(spec.Pos()), path)
			}
			if v > MinStd {
				found = append(found, stdFinding{Pos: c.fset.Position(spec.Pos()), Symbol: strconv.Quote(path), Since: v})
			}
		}
	}
	for _, imp := range pkg.Imports() {
		c.walk(imp)
	}
	for id, obj := range info.Uses {
		if obj.Pkg() == nil || obj.Pkg() == pkg || !isStd(obj.Pkg().Path()) {
			continue // universe, the package itself, other modules
		}
		c.walk(obj.Pkg())
		switch o := obj.(type) {
		case *types.Func:
			obj = o.Origin()
		case *types.Var:
			obj = o.Origin()
		}
		s, ok := c.objs[obj]
		if !ok || s.minor <= MinStd {
			continue
		}
		found = append(found, stdFinding{Pos: c.fset.Position(id.Pos()), Symbol: obj.Pkg().Name() + "." + s.name, Since: s.minor})
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i].Pos, found[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return found, nil
}

// walk records the version of every exported object in p's scope, of the
// methods of its types, and of their struct fields and interface methods.
func (c *stdChecker) walk(p *types.Package) {
	if c.walked[p] || !isStd(p.Path()) {
		return
	}
	c.walked[p] = true
	add := func(obj types.Object, sym string) {
		v, ok := c.api.since(p.Path(), sym)
		if !ok {
			return // not in the api files: unexported-type methods, except.txt
		}
		if old, seen := c.objs[obj]; !seen || v < old.minor {
			c.objs[obj] = stdSym{name: sym, minor: v}
		}
	}
	scope := p.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		add(obj, name)
		tn, ok := obj.(*types.TypeName)
		if !ok {
			continue
		}
		if named, ok := types.Unalias(tn.Type()).(*types.Named); ok {
			for i := 0; i < named.NumMethods(); i++ {
				if m := named.Method(i); m.Exported() {
					add(m, name+"."+m.Name())
				}
			}
		}
		switch u := tn.Type().Underlying().(type) {
		case *types.Struct:
			for i := 0; i < u.NumFields(); i++ {
				if f := u.Field(i); f.Exported() {
					add(f, name+"."+f.Name())
				}
			}
		case *types.Interface:
			for i := 0; i < u.NumExplicitMethods(); i++ {
				if m := u.ExplicitMethod(i); m.Exported() {
					add(m, name+"."+m.Name())
				}
			}
		}
	}
}

// isStd: the standard library's import paths have no dot in their first
// element.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// goroot is the GOROOT of the go command the tests run.
func goroot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// listFiles maps each package's import path to its directory and non-test
// Go files for this GOOS/GOARCH.
func listFiles(t *testing.T, root string, pkgs ...string) map[string][]string {
	t.Helper()
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderrOf(err))
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("go list line %q", line)
		}
		m[f[0]] = append([]string{f[1]}, strings.Fields(f[2])...)
	}
	return m
}

// TestCoresUseGo113Std: no core's non-test file uses a standard package or
// symbol that Go added after 1.13 (the toolchain's api files say when).
func TestCoresUseGo113Std(t *testing.T) {
	if got := "1." + strconv.Itoa(MinStd); got != MinLang {
		t.Fatalf("MinStd is go%s, MinLang go%s: the cores have one Go version", got, MinLang)
	}
	root := moduleRoot(t)
	api, err := readStdAPI(goroot(t))
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, c := range cores {
		pkgs = append(pkgs, "./"+c.Path)
	}
	chk := newStdChecker(t, root, api, pkgs...)
	files := listFiles(t, root, pkgs...)
	for _, c := range cores {
		t.Run(c.Path, func(t *testing.T) {
			df := files[module+"/"+c.Path]
			if len(df) < 2 {
				t.Fatalf("go list found no Go files for %s", c.Path)
			}
			found, err := chk.checkDir(df[0], df[1:])
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range found {
				f.Pos.Filename, _ = filepath.Rel(root, f.Pos.Filename)
				t.Errorf("%v", f)
			}
		})
	}
}

// TestStdCheckerReports runs the checker on testdata/newstd, which uses
// net/netip, strings.Cut, atomic.Uint64, methods and a struct field added
// after Go 1.13 next to older API: each "want:" comment there must be
// reported on its line, with the version, and nothing else.
func TestStdCheckerReports(t *testing.T) {
	root := moduleRoot(t)
	api, err := readStdAPI(goroot(t))
	if err != nil {
		t.Fatal(err)
	}
	const pkg = "./test/vendorable/testdata/newstd"
	chk := newStdChecker(t, root, api, pkg)
	df := listFiles(t, root, pkg)[module+"/test/vendorable/testdata/newstd"]
	if len(df) < 2 {
		t.Fatalf("go list found no Go files in %s", pkg)
	}
	found, err := chk.checkDir(df[0], df[1:])
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range found {
		if filepath.Base(f.Pos.Filename) != "newstd.go" {
			t.Errorf("finding outside newstd.go: %v", f)
		}
		got[fmt.Sprintf("%d: %s go1.%d", f.Pos.Line, f.Symbol, f.Since)] = true
		if s := f.String(); !strings.Contains(s, fmt.Sprintf("newstd.go:%d:%d: ", f.Pos.Line, f.Pos.Column)) {
			t.Errorf("finding %q does not start with file:line:column", s)
		}
	}
	want := map[string]bool{}
	for line, text := range wantComments(t, filepath.Join(df[0], "newstd.go")) {
		for _, w := range strings.Split(text, ",") {
			want[fmt.Sprintf("%d: %s", line, strings.TrimSpace(w))] = true
		}
	}
	if len(want) < 8 {
		t.Fatalf("only %d want comments in newstd.go", len(want))
	}
	for w := range want {
		if !got[w] {
			t.Errorf("not reported: newstd.go:%s", w)
		}
	}
	for g := range got {
		if !want[g] {
			t.Errorf("reported but not wanted: newstd.go:%s", g)
		}
	}
}

// wantComments maps line numbers to the text after "// want: " on them.
func wantComments(t *testing.T, file string) map[int]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]string{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			if text, ok := strings.CutPrefix(c.Text, "// want: "); ok {
				m[fset.Position(c.Pos()).Line] = text
			}
		}
	}
	return m
}

package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
)

// ErrVersion is what Command.Parse returns after printing the version for
// --version: the program exits 0, as after --help (flag.ErrHelp).
var ErrVersion = errors.New("version printed")

// Command is one program's (or subcommand's) command line in the shape of
// a Kubernetes component's: --help prints the program's own flags first,
// with "--", then the logging flags as a group, and lists the subcommands;
// --version prints the version (stamped by make, or the module version) and
// the commit from the build info.
// Register the program's flags on Flags and the logger's (klog.InitFlags)
// on Logging, then Parse.
type Command struct {
	// Name is the command as typed: "partition-dns", "partition-dns node-cache".
	Name string
	// Short says in one line what the program does.
	Short string
	// Flags are the program's own flags.
	Flags *flag.FlagSet
	// Logging are the logger's flags, printed as their own group.
	Logging *flag.FlagSet
	// Subcommands are listed by --help.
	Subcommands []Subcommand
	// Out receives --help and --version (standard output in a program).
	Out io.Writer

	args []string
}

// Subcommand is a subcommand as --help lists it.
type Subcommand struct{ Name, Short string }

// NewCommand returns a Command with empty flag sets writing to out.
func NewCommand(name, short string, out io.Writer) *Command {
	return &Command{
		Name: name, Short: short, Out: out,
		Flags:   flag.NewFlagSet(name, flag.ContinueOnError),
		Logging: flag.NewFlagSet(name+" logging", flag.ContinueOnError),
	}
}

// Parse parses args. --help prints the usage and returns flag.ErrHelp;
// --version prints the version and returns ErrVersion. Any other error is
// a bad command line (exit status 2), and names the flag.
func (c *Command) Parse(args []string) error {
	all := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	all.SetOutput(io.Discard) // errors are returned, usage printed on -h only
	all.Usage = func() {}
	for _, fs := range []*flag.FlagSet{c.Flags, c.Logging} {
		fs.VisitAll(func(f *flag.Flag) { all.Var(f.Value, f.Name, f.Usage) })
	}
	version := false
	if all.Lookup("version") == nil {
		all.BoolVar(&version, "version", false, "")
	}
	err := all.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.PrintUsage(c.Out)
		return flag.ErrHelp
	case err != nil:
		return fmt.Errorf("%v (see %s --help)", err, c.Name)
	case version:
		fmt.Fprintln(c.Out, Version(c.Name))
		return ErrVersion
	}
	c.args = all.Args()
	return nil
}

// Args are the arguments left after the flags.
func (c *Command) Args() []string { return c.args }

// PrintUsage writes the --help text.
func (c *Command) PrintUsage(w io.Writer) {
	if c.Short != "" {
		fmt.Fprintf(w, "%s\n\n", c.Short)
	}
	fmt.Fprintf(w, "Usage:\n  %s [flags]\n", c.Name)
	if len(c.Subcommands) > 0 {
		fmt.Fprintf(w, "  %s [command] [flags]\n\nAvailable Commands:\n", c.Name)
		width := 0
		for _, s := range c.Subcommands {
			width = max(width, len(s.Name))
		}
		for _, s := range c.Subcommands {
			fmt.Fprintf(w, "  %-*s  %s\n", width, s.Name, s.Short)
		}
	}
	own := flagLines(c.Flags)
	own = append(own, [2]string{"-h, --help", "help for " + c.Name})
	if c.Flags.Lookup("version") == nil {
		own = append(own, [2]string{"    --version", "Print version information and quit."})
	}
	sortLines(own)
	fmt.Fprintf(w, "\nFlags:\n")
	printLines(w, own)
	if logging := flagLines(c.Logging); len(logging) > 0 {
		fmt.Fprintf(w, "\nLogging flags:\n")
		printLines(w, logging)
	}
	if len(c.Subcommands) > 0 {
		fmt.Fprintf(w, "\nUse \"%s [command] --help\" for more information about a command.\n", c.Name)
	}
}

// flagLines are the "--name type" and help columns of fs's flags.
func flagLines(fs *flag.FlagSet) [][2]string {
	var out [][2]string
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flagType(f)
		left := "    --" + f.Name
		if typ != "" {
			left += " " + typ
		}
		if !isZeroDefault(f) {
			if typ == "string" {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		out = append(out, [2]string{left, usage})
	})
	return out
}

// flagType names a flag's value type as pflag does ("" for a boolean).
func flagType(f *flag.Flag) (typ, usage string) {
	if t, ok := f.Value.(interface{ Type() string }); ok {
		return t.Type(), f.Usage
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "", f.Usage
	}
	name, usage := flag.UnquoteUsage(f)
	switch name {
	case "value":
		name = strings.ToLower(strings.TrimPrefix(reflect.TypeOf(f.Value).String(), "*"))
		if i := strings.LastIndex(name, "."); i >= 0 {
			name = name[i+1:]
		}
		name = strings.TrimSuffix(strings.TrimSuffix(name, "value"), "flag")
		if name == "" || name == "func" { // flag.Func: a string parsed by a function
			name = "string"
		}
	case "uint":
		name = "uint"
	}
	return name, usage
}

func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]":
		return true
	}
	return false
}

func sortLines(lines [][2]string) {
	name := func(s string) string { return strings.TrimLeft(strings.TrimPrefix(strings.TrimSpace(s), "-h, "), "-") }
	sort.SliceStable(lines, func(i, j int) bool { return name(lines[i][0]) < name(lines[j][0]) })
}

func printLines(w io.Writer, lines [][2]string) {
	width := 0
	for _, l := range lines {
		width = max(width, len(l[0]))
	}
	for _, l := range lines {
		fmt.Fprintf(w, "  %-*s   %s\n", width, l[0], l[1])
	}
}

// version is the release version, stamped at link time by make and
// hack/images.sh from git describe:
//
//	go build -ldflags "-X github.com/tpkit-dev/tpkit/internal/cliflag.version=v0.3.0-4-g1a2b3c4"
//
// Empty (a plain go build), Version reports the module version from the
// build info instead.
var version string

// Version is the program's version line: the version stamped by the build
// (or, unstamped, the module version the go command recorded), the VCS commit
// from the build info, and the Go toolchain, e.g. "partition-dns
// v0.3.0-4-g1a2b3c4-dirty (commit 1a2b3c4d..., modified; go1.26.8
// linux/amd64)", or unstamped "partition-dns
// v0.0.0-20261123204409-9729732abcde+dirty (commit 9729732abcde...,
// modified; go1.26.8 linux/amd64)".
func Version(program string) string {
	bi, _ := debug.ReadBuildInfo()
	return versionLine(program, version, bi)
}

// versionLine is Version for a stamped version (empty: none) and build info
// (nil: none).
func versionLine(program, stamped string, bi *debug.BuildInfo) string {
	version, commit, modified := "unknown", "unknown", false
	if bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if stamped != "" {
		version = stamped
	}
	state := ""
	if modified {
		state = ", modified"
	}
	return fmt.Sprintf("%s %s (commit %s%s; %s %s/%s)", program, version, commit, state, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestCommand(t *testing.T) {
	newCmd := func(out *strings.Builder) (*Command, *string, *time.Duration) {
		c := NewCommand("prog", "prog does things.", out)
		name := c.Flags.String("name", "x", "The name.")
		d := c.Flags.Duration("wait", 0, "How long.")
		c.Flags.Bool("dry-run", false, "Only say.")
		var l List
		c.Flags.Var(&l, "items", "The items.")
		c.Logging.Int("v", 0, "Verbosity.")
		c.Subcommands = []Subcommand{{"sub", "A subcommand."}}
		return c, name, d
	}
	var out strings.Builder
	c, name, d := newCmd(&out)
	if err := c.Parse([]string{"--name", "y", "-wait=2s", "--v=3", "rest"}); err != nil {
		t.Fatal(err)
	}
	if *name != "y" || *d != 2*time.Second || c.Logging.Lookup("v").Value.String() != "3" || strings.Join(c.Args(), " ") != "rest" {
		t.Fatalf("parsed name=%q wait=%v v=%s args=%v", *name, *d, c.Logging.Lookup("v").Value, c.Args())
	}
	if out.Len() != 0 {
		t.Fatalf("Parse printed %q", out.String())
	}

	c, _, _ = newCmd(&out)
	if err := c.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	want := `prog does things.

Usage:
  prog [flags]
  prog [command] [flags]

Available Commands:
  sub  A subcommand.

Flags:
      --dry-run         Only say.
  -h, --help            help for prog
      --items strings   The items.
      --name string     The name. (default "x")
      --version         Print version information and quit.
      --wait duration   How long.

Logging flags:
      --v int   Verbosity.

Use "prog [command] --help" for more information about a command.
`
	if out.String() != want {
		t.Errorf("usage:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	c, _, _ = newCmd(&out)
	if err := c.Parse([]string{"--version"}); !errors.Is(err, ErrVersion) || !strings.HasPrefix(out.String(), "prog ") {
		t.Fatalf("--version: %v %q", err, out.String())
	}
	c, _, _ = newCmd(&out)
	if err := c.Parse([]string{"--wait", "soon"}); err == nil || !strings.Contains(err.Error(), "-wait") || !strings.Contains(err.Error(), "prog --help") {
		t.Fatalf("bad value: %v", err)
	}
}

func TestVersion(t *testing.T) {
	bi := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/tpkit-dev/tpkit", Version: "v0.0.0-20261123204409-9729732abcde+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "9729732abcdef0123456789abcdef0123456789a"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	toolchain := fmt.Sprintf("; %s %s/%s)", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, tc := range []struct {
		name, stamped string
		bi            *debug.BuildInfo
		want          string
	}{
		{"unstamped", "", bi, "prog v0.0.0-20261123204409-9729732abcde+dirty (commit 9729732abcdef0123456789abcdef0123456789a, modified" + toolchain},
		{"stamped", "v0.3.0-4-g9729732-dirty", bi, "prog v0.3.0-4-g9729732-dirty (commit 9729732abcdef0123456789abcdef0123456789a, modified" + toolchain},
		{"stamped without VCS", "9729732", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "prog 9729732 (commit unknown" + toolchain},
		{"no build info", "", nil, "prog unknown (commit unknown" + toolchain},
	} {
		if got := versionLine("prog", tc.stamped, tc.bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}

	// Version reads the package variable that -ldflags -X sets.
	defer func(v string) { version = v }(version)
	version = "v9.9.9-test"
	if got := Version("prog"); !strings.HasPrefix(got, "prog v9.9.9-test (commit ") || !strings.HasSuffix(got, toolchain) {
		t.Errorf("stamped Version: %q", got)
	}
	version = ""
	if got := Version("prog"); strings.Contains(got, "v9.9.9-test") || !strings.HasPrefix(got, "prog ") {
		t.Errorf("unstamped Version: %q", got)
	}
}

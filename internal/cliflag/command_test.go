package cliflag

import (
	"errors"
	"flag"
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

package testbin

import (
	"os"
	"os/exec"
	"strings"
)

// selfArgsEnv carries the program's arguments from Command to AsMain,
// separated by \x1f so that any argument, blanks included, survives.
const selfArgsEnv = "TPKIT_TESTBIN_MAIN_ARGS"

// AsMain lets a command's test binary be the command itself, without a
// build: call it first in TestMain. When the binary was started by Command,
// it runs main with Command's arguments, as the program name, and exits 0
// if main returns; otherwise it returns at once and the tests run.
func AsMain(name string, main func()) {
	a, ok := os.LookupEnv(selfArgsEnv)
	if !ok {
		return
	}
	os.Args = []string{name}
	if a != "" {
		os.Args = append(os.Args, strings.Split(a, "\x1f")...)
	}
	main()
	os.Exit(0)
}

// Command returns a command running this test binary as the program with
// args; the binary's TestMain must call AsMain. Exit codes, signals and
// output are the real program's. (A single empty argument reaches main as
// no argument.)
func Command(args ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), selfArgsEnv+"="+strings.Join(args, "\x1f"))
	return cmd
}

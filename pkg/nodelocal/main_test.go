package nodelocal

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/ops"
)

// Child processes: the end-to-end test re-executes this test binary with
// TPKIT_NODELOCAL_CHILD set, so the cache and the watcher are real processes
// that can be killed with SIGKILL.
const (
	childEnv = "TPKIT_NODELOCAL_CHILD"
	argsEnv  = "TPKIT_NODELOCAL_ARGS"
	argsSep  = "\x1f"
)

func TestMain(m *testing.M) {
	role := os.Getenv(childEnv)
	if role == "" {
		os.Exit(m.Run())
	}
	var args []string
	if a := os.Getenv(argsEnv); a != "" {
		args = strings.Split(a, argsSep)
	}
	ctx, cancel := ops.SignalContext(context.Background())
	defer cancel()
	var err error
	switch role {
	case "cache":
		err = RunCache(ctx, args)
	case "watch":
		err = RunWatch(ctx, args)
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

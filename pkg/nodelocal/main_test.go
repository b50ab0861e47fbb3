package nodelocal

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/ops"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// Child processes: the end-to-end test re-executes this test binary through
// testbin.Command with the role ("cache" or "watch") as first argument, so
// the cache and the watcher are real processes that can be killed with
// SIGKILL.
func TestMain(m *testing.M) {
	testbin.AsMain("nodelocal", runChild)
	os.Exit(m.Run())
}

func runChild() {
	role, args := os.Args[1], os.Args[2:]
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
}

package k8s_test

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/pkg/kubeproxy/k8s"
)

// TestRunnerWithUtilsFakeClock drives the Runner's MaxInterval with
// k8s.io/utils's fake clock through the adapter: no sleeping.
func TestRunnerWithUtilsFakeClock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	v := kubeproxy.NewView([]int{0}, kubeproxy.Options{})
	syncs := make(chan kubeproxy.SyncEvent, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		kubeproxy.NewRunner(v, func(context.Context, *kubeproxy.Snapshot, kubeproxy.Changes) error { return nil },
			kubeproxy.RunnerOptions{MaxInterval: time.Minute, Clock: kubeproxyk8s.Clock(clk),
				// Called once the next sync is scheduled.
				OnSync: func(e kubeproxy.SyncEvent) { syncs <- e }}).Run(ctx)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	v.OnServiceSynced(0)
	v.OnEndpointsSynced(0)
	if e := <-syncs; !e.Full {
		t.Fatalf("first sync %+v", e)
	}
	clk.Step(time.Minute)
	if e := <-syncs; !e.Full || !e.End.Equal(time.Unix(1_700_000_060, 0)) {
		t.Fatalf("periodic sync %+v, want a full one a minute later", e)
	}
}

package partition_test

import (
	"context"
	"testing"
	"time"

	"github.com/tpkit-dev/tpkit/pkg/faketp"
	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// An Arktos API server ignores sendInitialEvents. client-go 1.37 streams
// watch-lists by default, so its informers would wait for the
// initial-events-end bookmark forever; a Set's clients opt out unless asked.
func TestInformersSyncAgainstTPsThatIgnoreWatchList(t *testing.T) {
	cluster := faketp.StartT(t, faketp.Options{Partitions: 2, WatchList: faketp.WatchListIgnored})
	cases := []struct {
		name       string
		watchList  bool
		wantSynced bool
		wait       time.Duration
	}{
		{"list then watch by default", false, true, 20 * time.Second},
		// The control: with watch-list on, the same TPs never sync.
		{"watch-list on", true, false, 3 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, err := partition.New(partition.Options{KubeconfigPaths: cluster.KubeconfigPaths(), WatchList: tc.watchList})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range set.Partitions() {
				p.Informers.Core().V1().Pods().Informer()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			set.Start(ctx)
			got := set.WaitForSync(ctx, tc.wait)
			if got != tc.wantSynced {
				t.Fatalf("WaitForSync = %v, want %v (statuses %+v)", got, tc.wantSynced, set.Statuses())
			}
		})
	}
}

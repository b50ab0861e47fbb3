package tporigink8s_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tpkit-dev/tpkit/pkg/tporigin"
	tporigink8s "github.com/tpkit-dev/tpkit/testbed/tporigink8s"
)

// TestCollector publishes a tracker's Stats under the tpkit_tporigin_*
// names, with the types and labels they had when the core kept Prometheus
// values itself: gauges of entries, conflicts and pending changes, counters
// by partition, and the commit histograms.
func TestCollector(t *testing.T) {
	tr, err := tporigin.Open(tporigin.Options{Path: filepath.Join(t.TempDir(), "o.db"), Partitions: []string{"tp1", "tp2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(tporigink8s.Collector(tr))
	observe := func(uid, tp, tenant string, kind tporigin.Kind) {
		t.Helper()
		if _, err := tr.Observe(tporigin.Observation{UID: uid, Kind: kind, Partition: tp, Tenant: tenant}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		observe(fmt.Sprint("p", i), "tp1", "a", tporigin.KindPod)
	}
	observe("s1", "tp2", "", tporigin.KindService)
	observe("p0", "tp2", "a", tporigin.KindPod) // a UID conflict
	observe("q1", "tp2", "a", tporigin.KindPod) // tenant a in two TPs
	if n, err := tr.Prune("tp1", tporigin.KindPod, func(uid string) bool { return uid != "p2" }); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP tpkit_tporigin_entries Known origins, by partition and kind.
# TYPE tpkit_tporigin_entries gauge
tpkit_tporigin_entries{kind="endpoints",partition="tp1"} 0
tpkit_tporigin_entries{kind="endpoints",partition="tp2"} 0
tpkit_tporigin_entries{kind="endpointslices",partition="tp1"} 0
tpkit_tporigin_entries{kind="endpointslices",partition="tp2"} 0
tpkit_tporigin_entries{kind="pods",partition="tp1"} 2
tpkit_tporigin_entries{kind="pods",partition="tp2"} 1
tpkit_tporigin_entries{kind="services",partition="tp1"} 0
tpkit_tporigin_entries{kind="services",partition="tp2"} 1
# HELP tpkit_tporigin_pending Origin changes not yet durable in the database file.
# TYPE tpkit_tporigin_pending gauge
tpkit_tporigin_pending 5
# HELP tpkit_tporigin_pruned_total Origins removed after a full sync because the partition no longer reports the object, or at start because the partition is no longer configured.
# TYPE tpkit_tporigin_pruned_total counter
tpkit_tporigin_pruned_total{partition="tp1"} 1
# HELP tpkit_tporigin_tenant_conflicts_total Times a regular tenant was found in more than one tenant partition (or in another than its static one).
# TYPE tpkit_tporigin_tenant_conflicts_total counter
tpkit_tporigin_tenant_conflicts_total 1
# HELP tpkit_tporigin_tenants_in_conflict Regular tenants currently seen in more than one tenant partition.
# TYPE tpkit_tporigin_tenants_in_conflict gauge
tpkit_tporigin_tenants_in_conflict 1
# HELP tpkit_tporigin_uid_conflicts_total UIDs reported by a tenant partition other than their recorded origin, by the reporting partition; the first origin is kept.
# TYPE tpkit_tporigin_uid_conflicts_total counter
tpkit_tporigin_uid_conflicts_total{partition="tp2"} 1
`), "tpkit_tporigin_entries", "tpkit_tporigin_pending", "tpkit_tporigin_pruned_total", "tpkit_tporigin_tenant_conflicts_total",
		"tpkit_tporigin_tenants_in_conflict", "tpkit_tporigin_uid_conflicts_total"); err != nil {
		t.Fatal(err)
	}

	// One commit of the five pending keys (p2's add and its prune coalesce
	// into one): the counters and both histograms see it.
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP tpkit_tporigin_commit_batch_size Origin changes per group commit.
# TYPE tpkit_tporigin_commit_batch_size histogram
tpkit_tporigin_commit_batch_size_bucket{le="1"} 0
tpkit_tporigin_commit_batch_size_bucket{le="4"} 0
tpkit_tporigin_commit_batch_size_bucket{le="16"} 1
tpkit_tporigin_commit_batch_size_bucket{le="64"} 1
tpkit_tporigin_commit_batch_size_bucket{le="256"} 1
tpkit_tporigin_commit_batch_size_bucket{le="1024"} 1
tpkit_tporigin_commit_batch_size_bucket{le="4096"} 1
tpkit_tporigin_commit_batch_size_bucket{le="16384"} 1
tpkit_tporigin_commit_batch_size_bucket{le="65536"} 1
tpkit_tporigin_commit_batch_size_bucket{le="262144"} 1
tpkit_tporigin_commit_batch_size_bucket{le="+Inf"} 1
tpkit_tporigin_commit_batch_size_sum 5
tpkit_tporigin_commit_batch_size_count 1
# HELP tpkit_tporigin_commit_errors_total Group commits that failed; their changes stay queued and are retried.
# TYPE tpkit_tporigin_commit_errors_total counter
tpkit_tporigin_commit_errors_total 0
# HELP tpkit_tporigin_commits_total Durable group commits of origin changes to the database file.
# TYPE tpkit_tporigin_commits_total counter
tpkit_tporigin_commits_total 1
# HELP tpkit_tporigin_pending Origin changes not yet durable in the database file.
# TYPE tpkit_tporigin_pending gauge
tpkit_tporigin_pending 0
`), "tpkit_tporigin_commit_batch_size", "tpkit_tporigin_commit_errors_total", "tpkit_tporigin_commits_total", "tpkit_tporigin_pending"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(tporigink8s.Collector(tr), "tpkit_tporigin_commit_duration_seconds"); got != 1 {
		t.Fatalf("commit duration histograms: %d", got)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("metrics do not gather cleanly: %v", err)
	}
}

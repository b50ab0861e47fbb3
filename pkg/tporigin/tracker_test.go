package tporigin

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/corelog"
)

func mustOpen(t testing.TB, o Options) *Tracker {
	t.Helper()
	tr, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func observe(t testing.TB, tr *Tracker, uid, tp, tenant string, kind Kind) Result {
	t.Helper()
	r, err := tr.Observe(Observation{UID: uid, Kind: kind, Partition: tp, Tenant: tenant})
	if err != nil {
		t.Fatalf("Observe(%s from %s): %v", uid, tp, err)
	}
	return r
}

func wantOrigin(t testing.TB, tr *Tracker, uid, want string) {
	t.Helper()
	got, ok := tr.OriginOf(uid)
	if want == "" {
		if ok {
			t.Fatalf("OriginOf(%s) = %q, want not found", uid, got)
		}
		return
	}
	if !ok || got != want {
		t.Fatalf("OriginOf(%s) = %q, %v; want %q", uid, got, ok, want)
	}
}

func TestFirstOriginWinsAndConflictsAreCounted(t *testing.T) {
	tr := mustOpen(t, Options{Partitions: []string{"tp1", "tp2", "tp3"}})
	wantOrigin(t, tr, "u1", "") // unknown: explicit not-found, no default
	steps := []struct {
		uid, tp string
		want    Result
	}{
		{"u1", "tp2", Recorded},
		{"u1", "tp2", Known},
		{"u1", "tp1", Conflict}, // tp1 is first in flag order, but u1 came from tp2 first
		{"u1", "tp1", Conflict}, // counted once per UID and TP
		{"u1", "tp3", Conflict},
		{"u2", "tp1", Recorded},
	}
	for _, s := range steps {
		if got := observe(t, tr, s.uid, s.tp, "", KindPod); got != s.want {
			t.Fatalf("Observe(%s from %s) = %v, want %v", s.uid, s.tp, got, s.want)
		}
	}
	wantOrigin(t, tr, "u1", "tp2")
	wantOrigin(t, tr, "u2", "tp1")
	if got := tr.Stats().UIDConflicts; len(got) != 2 || got["tp1"] != 1 || got["tp3"] != 1 {
		t.Fatalf("uid conflicts = %v, want one each from tp1 and tp3 (once per UID and TP)", got)
	}
}

func TestForget(t *testing.T) {
	tr := mustOpen(t, Options{Partitions: []string{"tp1", "tp2", "tp3"}})
	observe(t, tr, "u1", "tp1", "", KindPod)
	observe(t, tr, "u1", "tp3", "", KindPod) // conflict
	observe(t, tr, "u1", "tp2", "", KindPod) // conflict

	// A delete from a TP that is not the origin changes nothing.
	if removed, err := tr.Forget("u1", "tp3"); err != nil || removed {
		t.Fatalf("Forget from a non-origin = %v, %v", removed, err)
	}
	wantOrigin(t, tr, "u1", "tp1")
	// The origin deletes it; tp2 still reports it and becomes the origin
	// (tp3 withdrew its report above).
	if removed, _ := tr.Forget("u1", "tp1"); !removed {
		t.Fatal("Forget from the origin did not remove")
	}
	wantOrigin(t, tr, "u1", "tp2")
	if removed, _ := tr.Forget("u1", "tp2"); !removed {
		t.Fatal("Forget from the new origin did not remove")
	}
	wantOrigin(t, tr, "u1", "")
	if removed, _ := tr.Forget("u1", "tp2"); removed {
		t.Fatal("Forget of an unknown UID reported a removal")
	}
	if removed, _ := tr.Forget("u1", "never-seen"); removed {
		t.Fatal("Forget from an unknown TP reported a removal")
	}
}

func TestObserveRejectsBadInput(t *testing.T) {
	tr := mustOpen(t, Options{})
	cases := []struct {
		o    Observation
		want string
	}{
		{Observation{Kind: KindPod, Partition: "tp1"}, "no UID"},
		{Observation{UID: "u", Kind: 0, Partition: "tp1"}, "unknown kind"},
		{Observation{UID: "u", Kind: 9, Partition: "tp1"}, "unknown kind"},
		{Observation{UID: "u", Kind: KindPod}, "partition name must not be empty"},
		{Observation{UID: "u", Kind: KindPod, Partition: "a/b"}, "must not contain"},
		{Observation{UID: "u", Kind: KindPod, Partition: strings.Repeat("p", 256)}, "longer than 255"},
		{Observation{UID: "u", Kind: KindPod, Partition: "tp1", Tenant: "Bad"}, "DNS-1123"},
	}
	for _, c := range cases {
		if _, err := tr.Observe(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Observe(%+v) = %v, want error containing %q", c.o, err, c.want)
		}
	}
	if tr.Len() != 0 {
		t.Fatalf("bad input was recorded: %d entries", tr.Len())
	}
}

func TestPartitionOfTenant(t *testing.T) {
	tr := mustOpen(t, Options{
		Partitions:    []string{"tp1", "tp2", "tp3"},
		StaticTenants: map[string]string{"fixed": "tp3"},
	})
	var changes []Change
	unsub := tr.Subscribe(func(c Change) {
		if c.Op == TenantPartitionChanged {
			changes = append(changes, c)
		}
	})
	defer unsub()

	want := func(tenant, tp string) {
		t.Helper()
		got, ok := tr.PartitionOfTenant(tenant)
		if tp == "" && ok || tp != "" && (!ok || got != tp) {
			t.Fatalf("PartitionOfTenant(%s) = %q, %v; want %q", tenant, got, ok, tp)
		}
	}
	want("fixed", "tp3") // static, before anything is observed
	want("a", "")
	want("system", "") // exists everywhere: no answer
	observe(t, tr, "p1", "tp3", "a", KindPod)
	observe(t, tr, "p2", "tp3", "a", KindService)
	want("a", "tp3")
	if got := tr.Stats().TenantConflicts; got != 0 {
		t.Fatalf("conflicts = %v before any conflict", got)
	}
	// Seen in tp2 too: a conflict, answered by flag order (tp2 before tp3)
	// whatever the order of events.
	observe(t, tr, "p3", "tp2", "a", KindPod)
	want("a", "tp2")
	if s := tr.Stats(); s.TenantConflicts != 1 || s.TenantsInConflict != 1 {
		t.Fatalf("tenant conflicts = %v, in conflict now %v; want 1 and 1", s.TenantConflicts, s.TenantsInConflict)
	}
	// The tp2 object goes away: no conflict, tp3 again.
	if _, err := tr.Forget("p3", "tp2"); err != nil {
		t.Fatal(err)
	}
	want("a", "tp3")
	if s := tr.Stats(); s.TenantConflicts != 1 || s.TenantsInConflict != 0 {
		t.Fatalf("tenant conflicts = %v, in conflict now %v; want 1 and 0", s.TenantConflicts, s.TenantsInConflict)
	}
	// A tenant observed somewhere other than its static TP: conflict, the
	// static answer stays.
	observe(t, tr, "p4", "tp1", "fixed", KindPod)
	want("fixed", "tp3")
	if s := tr.Stats(); s.TenantConflicts != 2 || s.TenantsInConflict != 1 {
		t.Fatalf("tenant conflicts = %v, in conflict now %v; want 2 and 1", s.TenantConflicts, s.TenantsInConflict)
	}
	tr.Forget("p1", "tp3")
	tr.Forget("p2", "tp3")
	want("a", "")
	wantChanges := []Change{
		{Op: TenantPartitionChanged, Tenant: "a", Partition: "tp3"},
		{Op: TenantPartitionChanged, Tenant: "a", Partition: "tp2"},
		{Op: TenantPartitionChanged, Tenant: "a", Partition: "tp3"},
		{Op: TenantPartitionChanged, Tenant: "a", Partition: ""},
	}
	if !slices.Equal(changes, wantChanges) {
		t.Fatalf("changes = %+v\nwant %+v", changes, wantChanges)
	}
}

func TestSubscribeSeesChangesInOrder(t *testing.T) {
	tr := mustOpen(t, Options{Partitions: []string{"tp1", "tp2"}})
	var got []Change
	unsub := tr.Subscribe(func(c Change) { got = append(got, c) })
	observe(t, tr, "u1", "tp1", "", KindPod)
	observe(t, tr, "u1", "tp2", "", KindPod) // conflict: no change
	observe(t, tr, "s1", "tp2", "", KindService)
	tr.Forget("u1", "tp1") // tp2 takes over
	unsub()
	observe(t, tr, "u9", "tp1", "", KindPod) // not delivered
	want := []Change{
		{Op: OriginAdded, UID: "u1", Kind: KindPod, Partition: "tp1", Tenant: "system"},
		{Op: OriginAdded, UID: "s1", Kind: KindService, Partition: "tp2", Tenant: "system"},
		{Op: OriginRemoved, UID: "u1", Kind: KindPod, Partition: "tp1", Tenant: "system"},
		{Op: OriginAdded, UID: "u1", Kind: KindPod, Partition: "tp2", Tenant: "system"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("changes = %+v\nwant %+v", got, want)
	}
}

func TestPrune(t *testing.T) {
	tr := mustOpen(t, Options{Path: filepath.Join(t.TempDir(), "o.db"), Partitions: []string{"tp1", "tp2"}})
	for i := 0; i < 10; i++ {
		observe(t, tr, fmt.Sprintf("p%d", i), "tp1", "", KindPod)
		observe(t, tr, fmt.Sprintf("q%d", i), "tp2", "", KindPod)
	}
	observe(t, tr, "s1", "tp1", "", KindService)
	live := func(uid string) bool { return uid == "p3" || uid == "p7" }
	n, err := tr.Prune("tp1", KindPod, live)
	if err != nil || n != 8 {
		t.Fatalf("Prune = %d, %v; want 8", n, err)
	}
	wantOrigin(t, tr, "p3", "tp1")
	wantOrigin(t, tr, "p0", "")
	wantOrigin(t, tr, "q0", "tp2") // another TP: untouched
	wantOrigin(t, tr, "s1", "tp1") // another kind: untouched
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The prune is persisted.
	path := tr.opts.Path
	tr.Close()
	tr2 := mustOpen(t, Options{Path: path})
	if tr2.Len() != 13 {
		t.Fatalf("after reopen: %d entries, want 13", tr2.Len())
	}
	wantOrigin(t, tr2, "p0", "")
	wantOrigin(t, tr2, "p7", "tp1")
}

func TestPersistenceRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "origins.db")
	tr := mustOpen(t, Options{Path: path, Partitions: []string{"tp1", "tp2"}})
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		tp := "tp1"
		if i%2 == 1 {
			tp = "tp2"
		}
		if _, err := tr.Record(ctx, Observation{UID: fmt.Sprint("u", i), Kind: KindPod, Partition: tp, Tenant: fmt.Sprint("t", i%3)}); err != nil {
			t.Fatal(err)
		}
	}
	observe(t, tr, "sys", "tp2", "system", KindEndpointSlice)
	tr.Forget("u0", "tp1")
	tr.Forget("u1", "tp2")
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Observe(Observation{UID: "x", Kind: KindPod, Partition: "tp1"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Observe after Close = %v, want ErrClosed", err)
	}

	// Another TP order on restart: the file keeps names, not positions.
	tr2 := mustOpen(t, Options{Path: path, Partitions: []string{"tp2", "tp1"}})
	if tr2.Len() != 99 {
		t.Fatalf("reloaded %d entries, want 99", tr2.Len())
	}
	wantOrigin(t, tr2, "u0", "")
	wantOrigin(t, tr2, "u1", "")
	wantOrigin(t, tr2, "u2", "tp1")
	wantOrigin(t, tr2, "u3", "tp2")
	if o, ok := tr2.Origin("sys"); !ok || o != (Origin{Partition: "tp2", Kind: KindEndpointSlice, Tenant: "system"}) {
		t.Fatalf("Origin(sys) = %+v, %v", o, ok)
	}
	if o, _ := tr2.Origin("u5"); o.Tenant != "t2" || o.Kind != KindPod {
		t.Fatalf("Origin(u5) = %+v", o)
	}
	// Tenants were re-learned from the file: t0 is in both TPs, and tp2 is
	// first in this run's order.
	if tp, ok := tr2.PartitionOfTenant("t0"); !ok || tp != "tp2" {
		t.Fatalf("PartitionOfTenant(t0) = %q, %v; want tp2", tp, ok)
	}
	if got := tr2.Partitions(); !slices.Equal(got, []string{"tp2", "tp1"}) {
		t.Fatalf("Partitions() = %v", got)
	}
}

// TestUnconfiguredPartitionsAreDropped: a TP removed from the node's
// configuration, or renamed (a removal plus a new TP), leaves records that
// would answer with a TP the node has no client for. They are dropped from
// memory and from the file at load.
func TestUnconfiguredPartitionsAreDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "origins.db")
	tr := mustOpen(t, Options{Path: path, Partitions: []string{"tp1", "tp2"}})
	for i := 0; i < 10; i++ {
		observe(t, tr, fmt.Sprint("a", i), "tp1", "acme", KindPod)
		observe(t, tr, fmt.Sprint("b", i), "tp2", "beta", KindPod)
	}
	observe(t, tr, "dns2", "tp2", "system", KindService)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}

	// tp2 is renamed tp2b.
	var logs []string
	tr2 := mustOpen(t, Options{Path: path, Partitions: []string{"tp1", "tp2b"}, Logger: corelog.Funcs{Warning: func(f string, a ...interface{}) {
		logs = append(logs, fmt.Sprintf(f, a...))
	}}})
	if tr2.Len() != 10 {
		t.Fatalf("loaded %d origins, want tp1's 10", tr2.Len())
	}
	wantOrigin(t, tr2, "a3", "tp1")
	wantOrigin(t, tr2, "b3", "")
	wantOrigin(t, tr2, "dns2", "")
	if _, ok := tr2.PartitionOfTenant("beta"); ok {
		t.Fatal("tenant beta still has a TP")
	}
	if got := tr2.Stats().Pruned["tp2"]; got != 11 {
		t.Fatalf("Stats().Pruned[tp2] = %d, want 11", got)
	}
	if !slices.ContainsFunc(logs, func(l string) bool { return strings.Contains(l, "Dropped 11 origins of tenant partition tp2") }) {
		t.Fatalf("no log line about the dropped origins: %q", logs)
	}
	// Re-learned under the new name.
	observe(t, tr2, "b3", "tp2b", "beta", KindPod)
	if err := tr2.Close(); err != nil {
		t.Fatal(err)
	}

	// The drop reached the file: tp2 coming back does not bring them back.
	tr3 := mustOpen(t, Options{Path: path, Partitions: []string{"tp1", "tp2", "tp2b"}})
	if tr3.Len() != 11 {
		t.Fatalf("third open loaded %d origins, want 11", tr3.Len())
	}
	wantOrigin(t, tr3, "b4", "")
	wantOrigin(t, tr3, "b3", "tp2b")
	if got := tr3.Stats().Pruned["tp2"]; got != 0 {
		t.Fatalf("third open dropped %d tp2 origins again", got)
	}
}

func TestSecondOpenerGetsClearError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.db")
	mustOpen(t, Options{Path: path})
	_, err := Open(Options{Path: path, LockTimeout: 50_000_000})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("second Open = %v, want a lock error naming %s", err, path)
	}
}

// TestGroupCommit checks that concurrent Record callers share commits and
// that every acknowledged origin is in the file.
func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.db")
	tr := mustOpen(t, Options{Path: path})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tr.Run(ctx); close(done) }()
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := tr.Record(ctx, Observation{UID: fmt.Sprintf("w%d-%d", w, i), Kind: KindPod, Partition: "tp1"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	commits := tr.Stats().Commits
	if commits == 0 || commits >= writers*each {
		t.Fatalf("%v commits for %d acknowledged writes; want group commits", commits, writers*each)
	}
	if tr.Pending() != 0 {
		t.Fatalf("%d pending after every write was acknowledged", tr.Pending())
	}
	cancel()
	<-done
	tr.Close()
	tr2 := mustOpen(t, Options{Path: path})
	if tr2.Len() != writers*each {
		t.Fatalf("reloaded %d, want %d", tr2.Len(), writers*each)
	}
}

// TestRunCommitsWithoutFlush checks that Run alone makes changes durable.
func TestRunCommitsWithoutFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.db")
	tr := mustOpen(t, Options{Path: path, BatchDelay: 1_000_000})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tr.Run(ctx); close(done) }()
	observe(t, tr, "u1", "tp1", "", KindPod)
	for tr.Pending() != 0 || tr.Stats().Commits == 0 {
		runtimeGosched()
	}
	observe(t, tr, "u2", "tp1", "", KindPod) // committed by Run when ctx ends
	cancel()
	<-done
	// Read the file while tr still holds it open: via a read-only view.
	var uids []string
	if err := loadFile(tr.db, path, nil, func(uid, _, _ []byte, _ Kind) error { uids = append(uids, string(uid)); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(uids, []string{"u1", "u2"}) {
		t.Fatalf("file holds %v", uids)
	}
}

func TestUUIDKeysRoundTrip(t *testing.T) {
	cases := []struct {
		uid  string
		uuid bool
	}{
		{"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", true},
		{"00000000-0000-0000-0000-000000000000", true},
		{"0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0", false}, // upper case: kept as a string
		{"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f", false},
		{"0f1e2d3c44b5a-6978-8796-a5b4c3d2e1f0", false},
		{"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg", false},
		{"pod-1", false},
	}
	tr := mustOpen(t, Options{Path: filepath.Join(t.TempDir(), "o.db")})
	for _, c := range cases {
		k, ok := parseUUID(c.uid)
		if ok != c.uuid {
			t.Errorf("parseUUID(%q) ok = %v", c.uid, ok)
		}
		if ok && k.String() != c.uid {
			t.Errorf("parseUUID(%q).String() = %q", c.uid, k.String())
		}
		observe(t, tr, c.uid, "tp1", "", KindPod)
	}
	n, err := tr.Prune("tp1", KindPod, func(uid string) bool {
		for _, c := range cases {
			if uid == c.uid {
				return true
			}
		}
		t.Errorf("Prune asked about %q, which was never observed", uid)
		return false
	})
	if err != nil || n != 0 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	path := tr.opts.Path
	tr.Close()
	tr2 := mustOpen(t, Options{Path: path})
	for _, c := range cases {
		wantOrigin(t, tr2, c.uid, "tp1")
	}
}

// TestLogger: the tracker's log lines go to Options.Logger at their level
// (and nowhere when it is nil): a UID conflict, a tenant conflict, a
// promotion and a prune.
func TestLogger(t *testing.T) {
	var lines []string
	level := func(l string) func(string, ...any) {
		return func(format string, args ...any) { lines = append(lines, l+" "+fmt.Sprintf(format, args...)) }
	}
	tr := mustOpen(t, Options{Partitions: []string{"tp1", "tp2"}, Logger: corelog.Funcs{Debug: level("D"), Info: level("I"), Warning: level("W"), Error: level("E")}})
	observe(t, tr, "u1", "tp1", "a", KindPod)
	observe(t, tr, "u1", "tp2", "a", KindPod)
	observe(t, tr, "u2", "tp2", "a", KindPod)
	tr.Forget("u1", "tp1")
	if _, err := tr.Prune("tp2", KindPod, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"W Same UID u1 (pods) reported by a second tenant partition tp2; keeping the first origin tp1",
		`W Regular tenant a seen in more than one tenant partition [tp1 tp2] (static ""); answering tp1`,
		"I Origin TP tp1 deleted UID u1, which another TP also reports; tp2 is now its origin",
		"I Pruned 2 origins (pods) that tenant partition tp2 no longer reports",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("log lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	quiet := mustOpen(t, Options{})
	observe(t, quiet, "u1", "tp1", "", KindPod)
	observe(t, quiet, "u1", "tp2", "", KindPod) // no Logger: discarded
}

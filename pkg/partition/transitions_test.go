package partition

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// The messages of the three transitions.
const (
	msgSynced    = "Tenant partition synced"
	msgStale     = "Tenant partition is stale: unreachable, its last known state is served"
	msgRecovered = "Tenant partition recovered"
)

// transitionLog returns the transition lines logged for partition tp, in
// order: the message, and for a stale line ": " and the error.
func transitionLog(logger klog.Logger, tp string) []string {
	var out []string
	for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if e.Message != msgSynced && e.Message != msgStale && e.Message != msgRecovered {
			continue
		}
		kv := map[string]any{}
		for i := 0; i+1 < len(e.ParameterKVList); i += 2 {
			kv[fmt.Sprint(e.ParameterKVList[i])] = e.ParameterKVList[i+1]
		}
		if kv["partition"] != tp {
			continue
		}
		line := e.Message
		if err, ok := kv["err"].(error); ok {
			line += ": " + err.Error()
		}
		out = append(out, line)
	}
	return out
}

// TestTransitionsLoggedAndCounted runs two fake TPs; tp2 goes down twice
// (its port refuses connections, then it answers 503) and comes back. Each
// change of tp2's state is logged once, with the error that made it stale,
// even though its feed keeps failing while it is down, and
// tpkit_partition_transitions_total counts them; tp1 only syncs.
func TestTransitionsLoggedAndCounted(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 2})
	var names []string
	var cfgs []*rest.Config
	for _, tp := range c.TPs() {
		names = append(names, tp.Name())
		cfgs = append(cfgs, tp.RESTConfig())
	}
	s, err := NewFromConfigs(names, cfgs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	for _, p := range s.Partitions() {
		lw, err := informer.NewListWatch(p.Client, informer.Pods, informer.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		// Retrying every 20ms, the feed fails often while its TP is down.
		// Only the sync matters here, not the store's keys.
		f := informer.NewFeed(lw, &corev1.Pod{}, cache.NewStore(cache.MetaNamespaceKeyFunc), informer.FeedOptions{
			Name: p.Name + " pods", Backoff: &wait.Backoff{Duration: 20 * time.Millisecond, Factor: 1, Steps: math.MaxInt32}})
		p.TrackSynced("pods", f.HasSynced)
		go f.Run(ctx)
	}
	s.Start(ctx)
	if !s.WaitForSync(ctx, time.Minute) {
		t.Fatalf("not synced: %+v", s.Statuses())
	}

	tp2, p2 := c.TPs()[1], s.Partitions()[1]
	want := []string{msgSynced}
	check := func(wantErr string) {
		t.Helper()
		got := transitionLog(logger, "tp2")
		ok := len(got) == len(want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.HasPrefix(got[i], want[i])
		}
		if !ok || (wantErr != "" && !strings.Contains(got[len(got)-1], wantErr)) {
			t.Fatalf("tp2's transitions logged:\n  %s\nwant:\n  %s\nthe last with %q", strings.Join(got, "\n  "), strings.Join(want, "\n  "), wantErr)
		}
	}
	check("")

	for _, outage := range []struct {
		mode faketp.Outage
		err  string
	}{
		{faketp.OutageRefuse, "connection refused"},
		{faketp.OutageUnavailable, "503 Service Unavailable"},
	} {
		if err := tp2.SetOutage(ctx, outage.mode); err != nil {
			t.Fatal(err)
		}
		// A 503 outage answers new requests only: end the open watch so
		// that the feed asks again.
		tp2.CloseWatches()
		testbin.Eventually(t, "tp2 stale in "+outage.mode.String(), func() bool { return p2.Status().Stale })
		// The feed keeps retrying and failing: the state holds, and is
		// not logged again.
		failed := p2.Status().Errors
		testbin.Eventually(t, "tp2's feed fails 3 more times", func() bool { return p2.Status().Errors >= failed+3 })
		want = append(want, msgStale)
		check(outage.err)

		if err := tp2.SetOutage(ctx, faketp.OutageNone); err != nil {
			t.Fatal(err)
		}
		testbin.Eventually(t, "tp2 recovered from "+outage.mode.String(), func() bool { return !p2.Status().Stale })
		want = append(want, msgRecovered)
		check("")
	}
	if got := transitionLog(logger, "tp1"); strings.Join(got, ",") != msgSynced {
		t.Fatalf("tp1's transitions logged: %q, want only %q", got, msgSynced)
	}
	if st := p2.Status(); !st.Synced || !st.Reachable || st.Stale || st.Transitions != (Transitions{Synced: 1, Stale: 2, Recovered: 2}) {
		t.Fatalf("tp2 after two outages: %+v", st)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector())
	expected := `
# HELP tpkit_partition_transitions_total Changes of the tenant partition's state, by the state entered: synced (the first time), stale (synced, then unreachable) or recovered (answering again).
# TYPE tpkit_partition_transitions_total counter
tpkit_partition_transitions_total{partition="tp1",to="recovered"} 0
tpkit_partition_transitions_total{partition="tp1",to="stale"} 0
tpkit_partition_transitions_total{partition="tp1",to="synced"} 1
tpkit_partition_transitions_total{partition="tp2",to="recovered"} 2
tpkit_partition_transitions_total{partition="tp2",to="stale"} 2
tpkit_partition_transitions_total{partition="tp2",to="synced"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), "tpkit_partition_transitions_total"); err != nil {
		t.Fatal(err)
	}
}

package kubeproxy

import (
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

// TestFollowTracker: with pkg/tporigin's tracker as the oracle, a regular
// tenant's service is served from the TP the tracker places the tenant in,
// and follows the tracker when it learns more.
func TestFollowTracker(t *testing.T) {
	tr, err := tporigin.Open(tporigin.Options{Partitions: []string{"tp1", "tp2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	v := NewView([]string{"tp1", "tp2"}, Options{Tenants: tr})
	stop := FollowTracker(v, tr)
	defer stop()

	// t1's service shows up in both TPs; the tracker knows nothing yet, so
	// both are served.
	v.OnServiceAdd("tp1", svcObj("t1", "web", "api", "10.0.0.1", port("http", 80)))
	v.OnServiceAdd("tp2", svcObj("t1", "web", "api", "10.0.0.2", port("http", 80)))
	s := NewSnapshot()
	v.Apply(s)
	if s.Len() != 2 {
		t.Fatalf("before the tracker knows t1: %d ports, want 2", s.Len())
	}
	// The tracker observes t1's pod in tp2: t1 lives in tp2.
	if _, err := tr.Observe(tporigin.Observation{UID: "pod-1", Kind: tporigin.KindPod, Partition: "tp2", Tenant: "t1"}); err != nil {
		t.Fatal(err)
	}
	c := v.Apply(s)
	if len(c.Services) != 1 || c.Services[0].Partition != "tp1" {
		t.Fatalf("changes %+v, want tp1's copy withdrawn", c)
	}
	if _, ok := s.Port(spn("tp2", "t1", "web", "api", "http")); !ok || s.Len() != 1 {
		t.Fatalf("t1 must be served from tp2 only; %d ports", s.Len())
	}
}

package kubeproxy_test

import (
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

// TestTrackerAsOracle: with pkg/tporigin's tracker as the oracle
// (Partitions.Tenants), a regular tenant's service is served from the TP the
// tracker places the tenant in, and follows the tracker when it learns more
// (its TenantPartitionChanged changes, passed on as View.TenantMoved). The
// tracker names TPs; the view numbers them.
func TestTrackerAsOracle(t *testing.T) {
	names := kubeproxy.Partitions{"tp1", "tp2"}
	tr, err := tporigin.Open(tporigin.Options{Partitions: names})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	v := kubeproxy.NewView(names.IDs(), kubeproxy.Options{Tenants: names.Tenants(tr)})
	stop := tr.Subscribe(func(c tporigin.Change) {
		if c.Op == tporigin.TenantPartitionChanged {
			v.TenantMoved(c.Tenant)
		}
	})
	defer stop()

	// t1's service shows up in both TPs; the tracker knows nothing yet, so
	// both are served.
	api := func(ip string) *kubeproxy.Service {
		return &kubeproxy.Service{Tenant: "t1", Namespace: "web", Name: "api", ClusterIPs: []string{ip}, Ports: []kubeproxy.ServicePort{{Name: "http", Port: 80}}}
	}
	v.OnServiceAdd(api("10.0.0.1"), 0)
	v.OnServiceAdd(api("10.0.0.2"), 1)
	s := kubeproxy.NewSnapshot()
	v.Apply(s)
	if s.Len() != 2 {
		t.Fatalf("before the tracker knows t1: %d ports, want 2", s.Len())
	}
	// The tracker observes t1's pod in tp2: t1 lives in tp2, id 1.
	if _, err := tr.Observe(tporigin.Observation{UID: "pod-1", Kind: tporigin.KindPod, Partition: "tp2", Tenant: "t1"}); err != nil {
		t.Fatal(err)
	}
	c := v.Apply(s)
	if len(c.Services) != 1 || c.Services[0].TenantPartitionID != 0 {
		t.Fatalf("changes %+v, want tp1's copy (id 0) withdrawn", c)
	}
	want := kubeproxy.ServicePortName{ServiceName: kubeproxy.ServiceName{TenantPartitionID: 1, Tenant: "t1", Namespace: "web", Name: "api"}, Port: "http"}
	if _, ok := s.Port(want); !ok || s.Len() != 1 {
		t.Fatalf("t1 must be served from tp2 only; %d ports", s.Len())
	}
}

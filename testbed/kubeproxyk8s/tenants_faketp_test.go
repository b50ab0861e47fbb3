package kubeproxyk8s_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
	kubeproxyk8s "github.com/tpkit-dev/tpkit/testbed/kubeproxyk8s"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// Two regular tenants of one TP each have service web/api and its
// endpoints. Upstream informer stores key by namespace/name only; the view
// must still hold both services, each with its own endpoints, through a
// delete of one and a relist.
func TestFakeTPTenantsWithEqualNamesInOneTP(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 1})
	tp := c.TPs()[0]
	if err := tp.Seed(
		service("acme", "web", "api", "10.96.5.5"),
		endpoints("acme", "web", "api", "10.244.1.50"),
		service("zeta", "web", "api", "10.96.6.6"),
		endpoints("zeta", "web", "api", "10.244.1.60"),
	); err != nil {
		t.Fatal(err)
	}
	set, err := partition.NewFromConfigs([]string{tp.Name()}, []*rest.Config{tp.RESTConfig()}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := kubeproxyk8s.PartitionsOf(set)
	view := kubeproxy.NewView(names.IDs(), kubeproxy.Options{})
	rec := &recorder{names: names}
	pairs := &pairChecker{}
	src, err := kubeproxyk8s.NewSource(set, []kubeproxy.ServiceHandler{view, rec, pairs},
		[]kubeproxy.EndpointsHandler{view, rec, pairs}, kubeproxyk8s.SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	set.Start(ctx)
	go src.Run(ctx)
	testbin.Eventually(t, "view synced", view.Synced)

	name := func(tenant string) kubeproxy.ServicePortName {
		return portName(tp.Name(), tenant, "web", "api")
	}
	check := func(when string, want map[string]string) {
		t.Helper()
		testbin.Eventually(t, when, func() bool {
			s := view.Snapshot()
			if s.Services() != len(want)+1 { // and the TP's master service

				return false
			}
			for tenant, ep := range want {
				if eps(s, name(tenant)) != ep {
					return false
				}
			}
			return true
		})
	}
	check("both tenants' services with their own endpoints", map[string]string{"acme": "10.244.1.50:5353", "zeta": "10.244.1.60:5353"})

	// An update event never turns one tenant's object into the other's.
	events, _, _ := rec.snapshot()
	for _, e := range events { // none expected before the update below
		if len(e) > 6 && e[:6] == "update" {
			t.Errorf("unexpected update event on start: %q (of %v)", e, events)
		}
	}

	// An update of acme's service reaches handlers paired with acme's
	// previous version, never with zeta's service of the same name.
	cs := partitiontest.Clientset(t, set.Partitions()[0])
	cur, err := cs.CoreV1().Services("web").Get(tenancyk8s.WithTenant(ctx, "acme"), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Labels = map[string]string{"touched": "yes"}
	if _, err := cs.CoreV1().Services("web").Update(tenancyk8s.WithTenant(ctx, "acme"), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testbin.Eventually(t, "acme's update", func() bool { return pairs.updates() > 0 })
	if bad := pairs.mismatches(); len(bad) != 0 {
		t.Errorf("updates paired across tenants: %v", bad)
	}

	if err := cs.CoreV1().Services("web").Delete(tenancyk8s.WithTenant(ctx, "acme"), "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The endpoints controller deletes the Endpoints of a deleted service,
	// as Arktos's does; without one they are deleted here.
	if err := cs.CoreV1().Endpoints("web").Delete(tenancyk8s.WithTenant(ctx, "acme"), "api", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	check("zeta's service alone after acme's delete", map[string]string{"zeta": "10.244.1.60:5353"})

	// A relist (history compacted, watches closed) keeps zeta's service and
	// brings back nothing of acme's.
	tp.Compact()
	tp.CloseWatches()
	if err := tp.Seed(service("acme", "web", "api", "10.96.7.7"), endpoints("acme", "web", "api", "10.244.1.70")); err != nil {
		t.Fatal(err)
	}
	check("both again after a relist", map[string]string{"acme": "10.244.1.70:5353", "zeta": "10.244.1.60:5353"})
	events, _, _ = rec.snapshot()
	if !slices.Contains(events, "add tp1 acme/web/api 10.96.7.7") {
		t.Errorf("no add for acme's new service in %v", events)
	}
}

// pairChecker is a handler that records updates whose old and new records
// are not the same tenant/namespace/name.
type pairChecker struct {
	mu  sync.Mutex
	n   int
	bad []string
}

func (p *pairChecker) OnServiceAdd(*kubeproxy.Service, int)    {}
func (p *pairChecker) OnServiceDelete(*kubeproxy.Service, int) {}
func (p *pairChecker) OnServiceSynced(int)                     {}
func (p *pairChecker) OnServiceUpdate(old, cur *kubeproxy.Service, tp int) {
	p.check(tp, old.Tenant+"/"+old.Namespace+"/"+old.Name, cur.Tenant+"/"+cur.Namespace+"/"+cur.Name)
}
func (p *pairChecker) OnEndpointsAdd(*kubeproxy.Endpoints, int)    {}
func (p *pairChecker) OnEndpointsDelete(*kubeproxy.Endpoints, int) {}
func (p *pairChecker) OnEndpointsSynced(int)                       {}
func (p *pairChecker) OnEndpointsUpdate(old, cur *kubeproxy.Endpoints, tp int) {
	p.check(tp, old.Tenant+"/"+old.Namespace+"/"+old.Name, cur.Tenant+"/"+cur.Namespace+"/"+cur.Name)
}

func (p *pairChecker) check(tp int, o, c string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if o != c {
		p.bad = append(p.bad, fmt.Sprintf("%d: %s -> %s", tp, o, c))
	}
}

func (p *pairChecker) updates() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *pairChecker) mismatches() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.bad)
}

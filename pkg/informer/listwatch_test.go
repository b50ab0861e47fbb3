package informer_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

func named(tenant, ns, name string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	tenancy.SetTenant(s, tenant)
	return s
}

// keys lists what a feed over scope holds once it has synced, as
// "<tenant>/<namespace>/<name>".
func keys(t *testing.T, c informer.Client, scope informer.Scope) []string {
	t.Helper()
	lw, err := informer.NewListWatch(c, informer.Services, scope)
	if err != nil {
		t.Fatal(err)
	}
	st := cache.NewStore(func(obj any) (string, error) {
		s := obj.(*corev1.Service)
		return tenancy.TenantOf(s) + "/" + s.Namespace + "/" + s.Name, nil
	})
	f := informer.NewFeed(lw, &corev1.Service{}, st, informer.FeedOptions{Name: scope.String()})
	go f.Run(t.Context())
	for !f.HasSynced() {
		if t.Context().Err() != nil {
			t.Fatal("test ended before the feed synced")
		}
		time.Sleep(5 * time.Millisecond)
	}
	out := st.ListKeys()
	slices.Sort(out)
	return out
}

// A scope reads every tenant through /tenants/all/, or one tenant (and one
// namespace) through that tenant's path; never the caller's short path.
func TestScopes(t *testing.T) {
	tp := faketp.StartT(t, faketp.Options{Partitions: 1}).TPs()[0]
	if err := tp.Seed(named("acme", "web", "api"), named("zeta", "web", "api"), named("zeta", "db", "pg"), named("system", "kube-system", "kube-dns")); err != nil {
		t.Fatal(err)
	}
	c, err := informer.NewClients(tenancyk8s.WrapConfig(tp.RESTConfig()), nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		scope informer.Scope
		want  []string
	}{
		// system/default/kubernetes is the TP's master service.
		{informer.Scope{}, []string{"acme/web/api", "system/default/kubernetes", "system/kube-system/kube-dns", "zeta/db/pg", "zeta/web/api"}},
		{informer.Scope{Tenant: "zeta"}, []string{"zeta/db/pg", "zeta/web/api"}},
		{informer.Scope{Tenant: "zeta", Namespace: "web"}, []string{"zeta/web/api"}},
		{informer.Scope{Tenant: "system"}, []string{"system/default/kubernetes", "system/kube-system/kube-dns"}},
		{informer.Scope{FieldSelector: "metadata.name=api"}, []string{"acme/web/api", "zeta/web/api"}},
	}
	for _, tc := range cases {
		t.Run(tc.scope.String(), func(t *testing.T) {
			if got := keys(t, c, tc.scope); !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestScopeErrors(t *testing.T) {
	c, err := informer.NewClients(tenancyk8s.WrapConfig(&rest.Config{Host: "http://127.0.0.1:1"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		r     informer.Resource
		scope informer.Scope
		want  string
	}{
		{informer.Services, informer.Scope{Namespace: "web"}, "needs a tenant"},
		{informer.Services, informer.Scope{Tenant: "all"}, "reserved"},
		{informer.Services, informer.Scope{Tenant: "Acme"}, "DNS-1123"},
		{informer.Namespaces, informer.Scope{Tenant: "acme", Namespace: "web"}, "not namespaced"},
	}
	for _, tc := range cases {
		_, err := informer.NewListWatch(c, tc.r, tc.scope)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewListWatch(%s, %+v) = %v, want an error containing %q", tc.r.Name, tc.scope, err, tc.want)
		}
	}
	if _, err := informer.NewEndpointsListWatch(c, "tp1", "maybe", informer.Scope{}); err == nil {
		t.Errorf("NewEndpointsListWatch accepted mode %q", "maybe")
	}
}

// DefaultBackoff relists within 625ms of a TP answering again, however
// long it was away (client-go's default waits up to a minute).
func TestDefaultBackoffIsCapped(t *testing.T) {
	next := informer.DefaultBackoff.DelayFunc()
	var longest time.Duration
	for range 1000 {
		longest = max(longest, next())
	}
	if longest > 625*time.Millisecond || longest < 500*time.Millisecond {
		t.Fatalf("longest delay %v, want within [500ms, 625ms]", longest)
	}
}

package source

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// The API server's service, default/kubernetes of the system tenant, by
// which every pod reaches its TP's API server: served under --dns-tenant
// too.
const (
	apiServerNamespace = "default"
	apiServerService   = "kubernetes"
)

// scopes returns the list/watches kind k is read through, each a path and
// selector that Arktos serves:
//   - services and endpoints: with --dns-namespace, one per served
//     namespace: /tenants/{t}/namespaces/{ns}/ with --dns-tenant, else
//     /tenants/all/ with the field selector metadata.namespace={ns}
//     (Arktos answers /tenants/all/namespaces/{ns}/ with an empty list,
//     and per-tenant paths would need a feed per tenant as tenants come
//     and go). With --dns-tenant other than system, also the system
//     tenant's default namespace, for the API server's service (services
//     selected by name; endpoints kept by name in the store, as a slice's
//     name is not its service's);
//   - namespaces: every namespace of the tenant in scope, kept or dropped
//     by the store. Arktos selects no namespace by name across tenants (a
//     list or watch of /tenants/all/namespaces with metadata.name= is
//     empty), and namespace objects are small, a few per tenant;
//   - pods: every pod of every tenant, as they say who is asking.
func (s *Source) scopes(k kind) []informer.Scope {
	t := s.opts.Tenant
	switch k {
	case namespaces:
		return []informer.Scope{{Tenant: t}}
	case pods:
		return []informer.Scope{{}}
	}
	var out []informer.Scope
	switch {
	case s.ns == nil:
		out = append(out, informer.Scope{Tenant: t})
	case t == "":
		for _, n := range s.nsList {
			out = append(out, informer.Scope{FieldSelector: "metadata.namespace=" + n})
		}
	default:
		for _, n := range s.nsList {
			out = append(out, informer.Scope{Tenant: t, Namespace: n})
		}
	}
	if t != "" && !tenancy.IsSystem(t) {
		api := informer.Scope{Tenant: tenancy.SystemTenant, Namespace: apiServerNamespace}
		if k == services {
			api.FieldSelector = "metadata.name=" + apiServerService
		}
		out = append(out, api)
	}
	return out
}

// exposed applies the scope options to an object of tenant and namespace ns
// that is, or feeds, service svc ("" for a namespace object).
func (s *Source) exposed(tenant, ns, svc string) bool {
	if s.opts.Tenant != "" && tenant != s.opts.Tenant {
		return tenant == tenancy.SystemTenant && ns == apiServerNamespace && svc == apiServerService
	}
	return s.ns == nil || s.ns[ns]
}

// serviceOf names the service an Endpoints or EndpointSlice feeds.
func serviceOf(m metav1.Object) string {
	switch o := m.(type) {
	case *corev1.Endpoints:
		return o.Name
	case *discoveryv1.EndpointSlice:
		return o.Labels[discoveryv1.LabelServiceName]
	}
	return ""
}

// followEndpoints reads a TP's endpoints in one more scope from the
// resource that first, the TP's first scope, chose: the TP's discovery is
// asked, and the choice logged, once per TP rather than once per scope.
// It is only listed after first (multiListWatch lists its subs in order).
type followEndpoints struct {
	first  *informer.EndpointsListWatch
	client informer.Client
	name   string
	scope  informer.Scope

	mu sync.Mutex
	lw *informer.EndpointsListWatch
}

func (f *followEndpoints) get() (*informer.EndpointsListWatch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lw != nil {
		return f.lw, nil
	}
	chosen := f.first.Chosen()
	if chosen == "" {
		return nil, fmt.Errorf("partition-dns: endpoints of %s in %s read before the partition's first scope chose a resource", f.name, f.scope)
	}
	mode, err := informer.ParseEndpointsMode(chosen)
	if err != nil {
		return nil, err
	}
	lw, err := informer.NewEndpointsListWatch(f.client, f.name, mode, f.scope)
	if err != nil {
		return nil, err
	}
	lw.SetListAs(slimList)
	f.lw = lw
	return lw, nil
}

func (f *followEndpoints) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	lw, err := f.get()
	if err != nil {
		return nil, err
	}
	return lw.ListWithContext(ctx, opts)
}

func (f *followEndpoints) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	lw, err := f.get()
	if err != nil {
		return nil, err
	}
	return lw.WatchWithContext(ctx, opts)
}

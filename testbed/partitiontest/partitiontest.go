package partitiontest

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/partition"
)

// Clients are the typed clients of one TP for the API groups tpkit's tests
// and harnesses write and read, core/v1 and discovery.k8s.io/v1, with the
// method names of client-go's clientset (kubernetes.Interface), so
// cs.CoreV1().Services(ns).Create reads as it does there. They are
// informer.Clients' REST clients with types: client-go's own typed
// clients import its whole scheme (every API group) and the apply
// configurations, about 90 packages that only they needed, over a minute of
// CPU in a cold race build of make test.
type Clients struct {
	core      CoreV1
	discovery DiscoveryV1
}

// NewClients returns the clients of c over h (rest.HTTPClientFor(c) when
// nil), as kubernetes.NewForConfigAndClient builds a clientset: the groups
// share h and, when c sets QPS without a RateLimiter, one rate limiter. c
// is used as given; wrap it with pkg/tenancy/k8s.WrapConfig first for
// Arktos's tenant paths.
func NewClients(c *rest.Config, h *http.Client) (*Clients, error) {
	cfg := *c
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("partitiontest: QPS %v needs a Burst above 0", cfg.QPS)
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	rc, err := informer.NewClients(&cfg, h)
	if err != nil {
		return nil, err
	}
	return &Clients{core: CoreV1{rc.CoreV1()}, discovery: DiscoveryV1{rc.DiscoveryV1()}}, nil
}

// CoreV1 is the core/v1 client.
func (c *Clients) CoreV1() CoreV1 { return c.core }

// DiscoveryV1 is the discovery.k8s.io/v1 client.
func (c *Clients) DiscoveryV1() DiscoveryV1 { return c.discovery }

// CoreV1 gives the core/v1 resources tpkit's tests use.
type CoreV1 struct{ c rest.Interface }

// RESTClient is the group's REST client, for requests by path.
func (g CoreV1) RESTClient() rest.Interface { return g.c }

// Pods in namespace ns ("" for all).
func (g CoreV1) Pods(ns string) Resource[*corev1.Pod, *corev1.PodList] {
	return Resource[*corev1.Pod, *corev1.PodList]{g.c, ns, "pods"}
}

// Services in namespace ns ("" for all).
func (g CoreV1) Services(ns string) Resource[*corev1.Service, *corev1.ServiceList] {
	return Resource[*corev1.Service, *corev1.ServiceList]{g.c, ns, "services"}
}

// Endpoints in namespace ns ("" for all).
func (g CoreV1) Endpoints(ns string) Resource[*corev1.Endpoints, *corev1.EndpointsList] {
	return Resource[*corev1.Endpoints, *corev1.EndpointsList]{g.c, ns, "endpoints"}
}

// ConfigMaps in namespace ns ("" for all).
func (g CoreV1) ConfigMaps(ns string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return Resource[*corev1.ConfigMap, *corev1.ConfigMapList]{g.c, ns, "configmaps"}
}

// Namespaces, which belong to no namespace.
func (g CoreV1) Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return Resource[*corev1.Namespace, *corev1.NamespaceList]{g.c, "", "namespaces"}
}

// DiscoveryV1 gives the discovery.k8s.io/v1 resources tpkit's tests use.
type DiscoveryV1 struct{ c rest.Interface }

// EndpointSlices in namespace ns ("" for all).
func (g DiscoveryV1) EndpointSlices(ns string) Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList] {
	return Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]{g.c, ns, "endpointslices"}
}

// Object is what a Resource holds: a pointer to an API type.
type Object interface {
	runtime.Object
	GetName() string
}

// Resource is one resource of a group in one namespace, with the methods
// of client-go's typed clients for it: the same requests, paths and
// options. T is the object's pointer type, L its list's.
type Resource[T Object, L runtime.Object] struct {
	c         rest.Interface
	namespace string
	resource  string
}

// request starts a request for the resource, in its namespace if it has one.
func (r Resource[T, L]) request(verb string) *rest.Request {
	return r.c.Verb(verb).NamespaceIfScoped(r.namespace, r.namespace != "").Resource(r.resource)
}

// into decodes the request's result into a new O.
func into[O runtime.Object](ctx context.Context, req *rest.Request) (O, error) {
	out := reflect.New(reflect.TypeFor[O]().Elem()).Interface().(O)
	if err := req.Do(ctx).Into(out); err != nil {
		var zero O
		return zero, err
	}
	return out, nil
}

// Get reads the object called name.
func (r Resource[T, L]) Get(ctx context.Context, name string, o metav1.GetOptions) (T, error) {
	return into[T](ctx, r.request("GET").Name(name).VersionedParams(&o, informer.ParameterCodec()))
}

// List lists the objects.
func (r Resource[T, L]) List(ctx context.Context, o metav1.ListOptions) (L, error) {
	return into[L](ctx, r.request("GET").VersionedParams(&o, informer.ParameterCodec()))
}

// Watch watches the objects.
func (r Resource[T, L]) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return r.request("GET").VersionedParams(&o, informer.ParameterCodec()).Watch(ctx)
}

// Create creates obj.
func (r Resource[T, L]) Create(ctx context.Context, obj T, o metav1.CreateOptions) (T, error) {
	return into[T](ctx, r.request("POST").VersionedParams(&o, informer.ParameterCodec()).Body(obj))
}

// Update replaces obj.
func (r Resource[T, L]) Update(ctx context.Context, obj T, o metav1.UpdateOptions) (T, error) {
	return into[T](ctx, r.request("PUT").Name(obj.GetName()).VersionedParams(&o, informer.ParameterCodec()).Body(obj))
}

// UpdateStatus replaces obj's status.
func (r Resource[T, L]) UpdateStatus(ctx context.Context, obj T, o metav1.UpdateOptions) (T, error) {
	return into[T](ctx, r.request("PUT").Name(obj.GetName()).SubResource("status").VersionedParams(&o, informer.ParameterCodec()).Body(obj))
}

// Patch patches the object called name (or its subresource).
func (r Resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, subresources ...string) (T, error) {
	return into[T](ctx, r.request("PATCH").Name(name).SubResource(subresources...).VersionedParams(&o, informer.ParameterCodec()).Body(data).SetHeader("Content-Type", string(pt)))
}

// Delete deletes the object called name.
func (r Resource[T, L]) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	return r.request("DELETE").Name(name).Body(&o).Do(ctx).Error()
}

// Clientset returns the clients of p over its tenant-preserving config and
// HTTP client.
func Clientset(t testing.TB, p *partition.Partition) *Clients {
	t.Helper()
	cs, err := NewClients(p.Config, p.HTTPClient)
	if err != nil {
		t.Fatalf("clients of tenant partition %s: %v", p.Name, err)
	}
	return cs
}

// ListWatch lists and watches through a typed client's List and Watch,
// such as cs.CoreV1().Pods("").List and .Watch: the ListWatch that
// client-go's informer factory builds for the resource. With
// cache.NewSharedIndexInformer it makes the factory's informer without
// the factory, which would link every API group's informers and clients.
func ListWatch[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error), watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, o)
		},
		WatchFuncWithContext: watchFn,
	}
}

package informer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	kjson "sigs.k8s.io/json"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
)

// AllTenants is the tenant segment of Arktos paths that span every tenant:
// /api/v1/tenants/all/{resource}. A short path (/api/v1/{resource}) means the
// caller's own tenant, never every tenant.
const AllTenants = "all"

// Resource is an API resource that tpkit lists and watches in a TP.
type Resource struct {
	GroupVersion schema.GroupVersion
	// Name is the plural resource name: "services".
	Name string
	// Namespaced resources take /namespaces/{ns}/ in their paths; namespaces
	// themselves are tenanted but not namespaced.
	Namespaced bool
	// New returns an empty object and NewList an empty list of the resource.
	New     func() runtime.Object
	NewList func() runtime.Object
}

// The resources tpkit's consumers read.
var (
	Services = Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "services", Namespaced: true,
		New: func() runtime.Object { return &corev1.Service{} }, NewList: func() runtime.Object { return &corev1.ServiceList{} }}
	Endpoints = Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "endpoints", Namespaced: true,
		New: func() runtime.Object { return &corev1.Endpoints{} }, NewList: func() runtime.Object { return &corev1.EndpointsList{} }}
	EndpointSlices = Resource{GroupVersion: discoveryv1.SchemeGroupVersion, Name: "endpointslices", Namespaced: true,
		New: func() runtime.Object { return &discoveryv1.EndpointSlice{} }, NewList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} }}
	Pods = Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "pods", Namespaced: true,
		New: func() runtime.Object { return &corev1.Pod{} }, NewList: func() runtime.Object { return &corev1.PodList{} }}
	ConfigMaps = Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "configmaps", Namespaced: true,
		New: func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} }}
	Namespaces = Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "namespaces",
		New: func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} }}
)

// Scope narrows what a ListWatch covers.
type Scope struct {
	// Tenant is the one tenant to read, through /tenants/{Tenant}/ ("system"
	// included); empty reads every tenant, through /tenants/all/.
	Tenant string
	// Namespace is the one namespace to read; empty reads every namespace.
	// It needs a Tenant: Arktos answers /tenants/all/namespaces/{ns}/ with
	// an empty list.
	Namespace string
	// LabelSelector and FieldSelector are passed to the TP as they are.
	LabelSelector, FieldSelector string
}

// String is the scope's path segment, for names and logs.
func (s Scope) String() string {
	t := s.Tenant
	if t == "" {
		t = AllTenants
	}
	out := "tenants/" + t
	if s.Namespace != "" {
		out += "/namespaces/" + s.Namespace
	}
	return out
}

func (s Scope) validate(r Resource) error {
	if s.Tenant != "" && !tenancy.IsSystem(s.Tenant) {
		if err := tenancy.ValidateTenantName(s.Tenant); err != nil {
			return err
		}
	}
	if s.Namespace != "" {
		if s.Tenant == "" {
			return fmt.Errorf("a namespace scope (%q) needs a tenant: Arktos serves no namespace across all tenants", s.Namespace)
		}
		if !r.Namespaced {
			return fmt.Errorf("%s are not namespaced", r.Name)
		}
	}
	return nil
}

// ListWatch lists and watches one resource of one TP through Arktos's
// tenant paths. It always lists and then watches: it never asks for a
// streaming watch-list, which Arktos (Kubernetes 1.18) ignores, and whose
// temporary store in client-go keys by namespace/name.
//
// It is a cache.ListerWatcher for client-go reflectors.
type ListWatch struct {
	client   rest.Interface
	resource Resource
	scope    Scope
	listAs   ListAs
}

// ListAs returns the list object a list of r decodes into, in place of r's
// own list type, or nil for r's own. A consumer that needs a few fields of
// each object lists into a type of its own that reads only those (its JSON
// decoding skips the rest of each object unread), so a list leaves far less
// garbage. The type decodes the JSON as the TP sent it: an Arktos object's
// tenant is its metadata.tenant (pkg/tenancy/k8s's transport leaves the
// body alone). Watches still deliver r's own type.
type ListAs func(r Resource) runtime.Object

// SetListAs makes lists decode through f.
func (lw *ListWatch) SetListAs(f ListAs) { lw.listAs = f }

// NewListWatch returns the list/watch of r in scope over a TP's client.
func NewListWatch(c Client, r Resource, s Scope) (*ListWatch, error) {
	if err := s.validate(r); err != nil {
		return nil, fmt.Errorf("informer: listing %s: %w", r.Name, err)
	}
	rc, err := c.RESTClientFor(r.GroupVersion)
	if err != nil {
		return nil, err
	}
	return &ListWatch{client: rc, resource: r, scope: s}, nil
}

// Resource is what the ListWatch reads.
func (lw *ListWatch) Resource() Resource { return lw.resource }

// request builds the path /{prefix}/tenants/{t|all}[/namespaces/{ns}]/{resource}.
func (lw *ListWatch) request(opts *metav1.ListOptions) *rest.Request {
	tenant := lw.scope.Tenant
	if tenant == "" {
		tenant = AllTenants
	}
	if lw.scope.LabelSelector != "" {
		opts.LabelSelector = lw.scope.LabelSelector
	}
	if lw.scope.FieldSelector != "" {
		opts.FieldSelector = lw.scope.FieldSelector
	}
	// Never a watch-list: see the type's comment.
	opts.SendInitialEvents = nil
	opts.ResourceVersionMatch = ""
	req := lw.client.Get().Prefix("tenants", tenant)
	if lw.scope.Namespace != "" {
		req = req.Namespace(lw.scope.Namespace)
	}
	return req.Resource(lw.resource.Name).VersionedParams(opts, parameterCodec())
}

// ListWithContext lists the scope once.
func (lw *ListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	if lw.listAs != nil {
		if out := lw.listAs(lw.resource); out != nil {
			return out, lw.listRaw(ctx, lw.request(&opts).Timeout(timeout), out)
		}
	}
	out := lw.resource.NewList()
	err := lw.request(&opts).Timeout(timeout).Do(ctx).Into(out)
	return out, err
}

// listBuffers holds the buffers list pages are read into: pages follow one
// another (and, with a PageGate, take turns across feeds), so one buffer of
// a page's size serves them all instead of each page growing its own. The
// decoded objects copy what they keep, so a buffer is free once decoded; an
// idle pool is emptied by the collector.
var listBuffers sync.Pool

// listRaw reads a list's JSON body as the TP sent it (metadata.tenant where
// Arktos puts it) into out, a ListAs type: one buffer, where Do and the
// tenancy transport would copy a large page several times over.
func (lw *ListWatch) listRaw(ctx context.Context, req *rest.Request, out runtime.Object) error {
	body, err := req.Stream(tenancyk8s.WithRawResponse(ctx))
	if err != nil {
		return err
	}
	defer body.Close()
	buf, _ := listBuffers.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer func() { buf.Reset(); listBuffers.Put(buf) }()
	if _, err := buf.ReadFrom(body); err != nil {
		return fmt.Errorf("informer: reading a list of %s: %w", lw.resource.Name, err)
	}
	if u, ok := out.(json.Unmarshaler); ok {
		err = u.UnmarshalJSON(buf.Bytes()) // without the outer decoder's own scan of the page
	} else {
		err = kjson.UnmarshalCaseSensitivePreserveInts(buf.Bytes(), out)
	}
	if err != nil {
		return fmt.Errorf("informer: decoding a list of %s: %w", lw.resource.Name, err)
	}
	return nil
}

// WatchWithContext watches the scope from opts.ResourceVersion.
func (lw *ListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return lw.request(&opts).Timeout(timeout).Watch(ctx)
}

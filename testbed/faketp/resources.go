package faketp

import (
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// scope is where a resource lives in the Arktos path tree.
type scope int

const (
	// scopeCluster: /api/v1/{res}/{name} (tenants).
	scopeCluster scope = iota
	// scopeTenant: /api/v1/tenants/{t}/{res}/{name} (namespaces).
	scopeTenant
	// scopeNamespace: /api/v1/tenants/{t}/namespaces/{ns}/{res}/{name}.
	scopeNamespace
)

// resource describes one served resource.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	singular   string
	scope      scope
	shortNames []string
	categories []string
	// status: the resource has a /status subresource, and its main endpoint
	// ignores status changes (as kube-apiserver's strategies do).
	status bool
	// newTyped returns an empty typed object (nil for tenants: no upstream
	// type). Typed objects check bodies, feed admission, and drive strategic
	// merge patches.
	newTyped func() runtime.Object
	// fields are the selectable fields besides metadata.name and
	// metadata.namespace, with their JSON paths in the object.
	fields map[string][]string
	// generation: the kind has metadata.generation, bumped by spec changes.
	generation bool
	// verbs are the verbs discovery lists; allVerbs when nil.
	verbs []string
}

// storeName is the resource's key in the store: "pods", "apps/daemonsets".
func (r *resource) storeName() string {
	if r.gvr.Group == "" {
		return r.gvr.Resource
	}
	return r.gvr.Group + "/" + r.gvr.Resource
}

func (r *resource) apiVersion() string { return r.gvr.GroupVersion().String() }

func (r *resource) gvk() schema.GroupVersionKind { return r.gvr.GroupVersion().WithKind(r.kind) }

// groupVersions are the served API group versions, in discovery order.
var groupVersions = []schema.GroupVersion{
	{Version: "v1"},
	{Group: "apps", Version: "v1"},
	{Group: "discovery.k8s.io", Version: "v1"},
}

// scheme knows the typed kinds of groupVersions, no others: it decodes the
// protobuf bodies of typed clients and names the kind of a typed object
// given to Seed. client-go's kubernetes/scheme would do the same and
// register, and link into fake-tp, every API group Kubernetes has. It is
// built on first use and never changed.
var scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	// Each registers its group's kinds and lists, and metav1's Status,
	// WatchEvent and options with it.
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, discoveryv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // a registration conflict is a programming error
		}
	}
	return s
})

// protobufDecoder decodes a Kubernetes protobuf (or JSON) body into the
// scheme's typed object, without defaulting or conversion.
var protobufDecoder = sync.OnceValue(func() runtime.Decoder {
	return serializer.NewCodecFactory(scheme()).UniversalDeserializer()
})

// verbsWithoutDeleteCollection are the verbs of the resources that
// kube-apiserver 1.18 serves without deletecollection.
var verbsWithoutDeleteCollection = []string{"create", "delete", "get", "list", "patch", "update", "watch"}

// resources is fake-tp's fixed set of resources, in discovery order.
var resources = []*resource{
	{
		gvr: schema.GroupVersionResource{Version: "v1", Resource: "tenants"}, kind: "Tenant", singular: "tenant",
		scope: scopeCluster, shortNames: []string{"te"}, status: true, verbs: verbsWithoutDeleteCollection,
	},
	{
		gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, kind: "Namespace", singular: "namespace",
		scope: scopeTenant, shortNames: []string{"ns"}, status: true, verbs: verbsWithoutDeleteCollection,
		newTyped: func() runtime.Object { return &corev1.Namespace{} },
		fields:   map[string][]string{"status.phase": {"status", "phase"}},
	},
	{
		gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, kind: "Pod", singular: "pod",
		scope: scopeNamespace, shortNames: []string{"po"}, categories: []string{"all"}, status: true,
		newTyped: func() runtime.Object { return &corev1.Pod{} },
		fields: map[string][]string{
			"spec.nodeName":            {"spec", "nodeName"},
			"spec.restartPolicy":       {"spec", "restartPolicy"},
			"spec.schedulerName":       {"spec", "schedulerName"},
			"spec.serviceAccountName":  {"spec", "serviceAccountName"},
			"spec.hostNetwork":         {"spec", "hostNetwork"},
			"status.phase":             {"status", "phase"},
			"status.podIP":             {"status", "podIP"},
			"status.nominatedNodeName": {"status", "nominatedNodeName"},
		},
	},
	{
		gvr: schema.GroupVersionResource{Version: "v1", Resource: "services"}, kind: "Service", singular: "service",
		scope: scopeNamespace, shortNames: []string{"svc"}, categories: []string{"all"}, status: true, verbs: verbsWithoutDeleteCollection,
		newTyped: func() runtime.Object { return &corev1.Service{} },
		fields:   map[string][]string{"spec.clusterIP": {"spec", "clusterIP"}, "spec.type": {"spec", "type"}},
	},
	{
		gvr: schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, kind: "Endpoints", singular: "endpoints",
		scope: scopeNamespace, shortNames: []string{"ep"},
		newTyped: func() runtime.Object { return &corev1.Endpoints{} },
	},
	{
		gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, kind: "ConfigMap", singular: "configmap",
		scope: scopeNamespace, shortNames: []string{"cm"},
		newTyped: func() runtime.Object { return &corev1.ConfigMap{} },
	},
	{
		gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, kind: "Secret", singular: "secret",
		scope:    scopeNamespace,
		newTyped: func() runtime.Object { return &corev1.Secret{} },
		fields:   map[string][]string{"type": {"type"}},
	},
	{
		gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, kind: "DaemonSet", singular: "daemonset",
		scope: scopeNamespace, shortNames: []string{"ds"}, categories: []string{"all"}, status: true, generation: true,
		newTyped: func() runtime.Object { return &appsv1.DaemonSet{} },
	},
	{
		gvr: schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}, kind: "EndpointSlice", singular: "endpointslice",
		scope:    scopeNamespace,
		newTyped: func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		fields:   map[string][]string{"addressType": {"addressType"}},
	},
}

// hasVerb says whether the resource serves verb.
func (r *resource) hasVerb(verb string) bool {
	return r.verbs == nil || slices.Contains(r.verbs, verb)
}

// lookupResource finds the resource named res in group version gv.
func lookupResource(gv schema.GroupVersion, res string) *resource {
	for _, r := range resources {
		if r.gvr.Group == gv.Group && r.gvr.Version == gv.Version && r.gvr.Resource == res {
			return r
		}
	}
	return nil
}

// lookupStoreName finds a resource by its store name.
func lookupStoreName(name string) *resource {
	for _, r := range resources {
		if r.storeName() == name {
			return r
		}
	}
	return nil
}

// lookupKind finds a resource by apiVersion and kind (for manifests).
func lookupKind(gvk schema.GroupVersionKind) *resource {
	for _, r := range resources {
		if r.gvk() == gvk {
			return r
		}
	}
	return nil
}

func servesGroupVersion(gv schema.GroupVersion) bool {
	for _, g := range groupVersions {
		if g == gv {
			return true
		}
	}
	return false
}

package source

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Lists decode into the slim list types below (informer.ListAs): each reads
// only what the index needs of an object and skips the rest unread, and
// hands on core/v1 (or discovery/v1) objects with just those fields set, so
// the rest of the source treats a listed object as it treats a watched one.
// A full decode of a list page makes every field of every object (a pod's
// containers, every object's managed fields) only to drop it; at 600k
// objects that garbage is what the collector spends a start on.

// slimList is the informer.ListAs of the source's feeds.
func slimList(r informer.Resource) runtime.Object {
	switch r.GroupVersion {
	case corev1.SchemeGroupVersion:
		switch r.Name {
		case informer.Services.Name:
			return newList(readService, scanService)
		case informer.Endpoints.Name:
			return newList(readEndpoints, scanEndpoints)
		case informer.Pods.Name:
			// A pod is read as a slimPod and stays one: a page of 500
			// corev1.Pods was 620 KB of garbage for a few fields each.
			return newItemList(scanPod)
		case informer.Namespaces.Name:
			return newList(readNamespace, nil)
		}
	case discoveryv1.SchemeGroupVersion:
		if r.Name == informer.EndpointSlices.Name {
			return newList(readEndpointSlice, nil)
		}
	}
	return nil
}

// slimMeta is what the index needs of an object's metadata. The tenant is
// metadata.tenant, or the annotation pkg/tenancy/k8s's transport moves it
// to; the label is an EndpointSlice's service.
type slimMeta struct {
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	Tenant      string `json:"tenant"`
	Annotations struct {
		Tenant string `json:"tpkit.dev/tenant"` // tenancy.TenantAnnotation
	} `json:"annotations"`
	Labels struct {
		Service string `json:"kubernetes.io/service-name"` // discoveryv1.LabelServiceName
	} `json:"labels"`
}

// tenantMarks hands out the annotation map that names a tenant
// (tenancy.TenantAnnotation), one map per tenant for a whole list page:
// the objects are read, never written, and a map per object was 600k
// small maps of garbage in a start at 600k objects.
type tenantMarks map[string]map[string]string

func (c tenantMarks) of(tenant string) map[string]string {
	m, ok := c[tenant]
	if !ok {
		m = map[string]string{tenancy.TenantAnnotation: tenant}
		c[tenant] = m
	}
	return m
}

// objectMeta is m as tenancy.TenantOf reads it. Objects of one tenant
// share their annotation map (marks).
func (m *slimMeta) objectMeta(marks tenantMarks) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}
	t := m.Tenant
	if t == "" {
		t = m.Annotations.Tenant
	}
	if t != "" && !tenancy.IsSystem(t) {
		out.Annotations = marks.of(t)
	}
	if m.Labels.Service != "" {
		out.Labels = map[string]string{discoveryv1.LabelServiceName: m.Labels.Service}
	}
	return out
}

// deepCopier is an API type's pointer.
type deepCopier[T any] interface {
	*T
	DeepCopyInto(*T)
}

// list is a list of T read slim: UnmarshalJSON decodes the items as R, the
// fields that matter, and makes each a T with conv.
type list[T any, PT deepCopier[T]] struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []T `json:"items"`

	read func(b []byte, l *list[T, PT]) error
}

// newList returns an empty list whose items decode as R (with scan, when
// not nil, else or when it does not take the page with sigs.k8s.io/json:
// readPage) and convert with conv, which shares one tenantMarks over a
// page.
func newList[R, T any, PT deepCopier[T]](conv func(*R, *T, tenantMarks), scan func(*scanner, *R)) *list[T, PT] {
	return &list[T, PT]{read: func(b []byte, l *list[T, PT]) error {
		tm, lm, items, err := readPage(b, scan)
		if err != nil {
			return err
		}
		l.TypeMeta, l.ListMeta = tm, lm
		l.Items = make([]T, len(items))
		marks := tenantMarks{}
		for i := range items {
			conv(&items[i], &l.Items[i], marks)
		}
		return nil
	}}
}

// newItemList returns an empty list whose items are read as T and stay
// T: the sink takes a T itself (store.apply).
func newItemList[T any, PT deepCopier[T]](scan func(*scanner, *T)) *list[T, PT] {
	return &list[T, PT]{read: func(b []byte, l *list[T, PT]) error {
		tm, lm, items, err := readPage(b, scan)
		if err != nil {
			return err
		}
		l.TypeMeta, l.ListMeta, l.Items = tm, lm, items
		return nil
	}}
}

// UnmarshalJSON decodes a JSON list, reading only what conv needs.
func (l *list[T, PT]) UnmarshalJSON(b []byte) error { return l.read(b, l) }

// DeepCopyObject copies the list (runtime.Object).
func (l *list[T, PT]) DeepCopyObject() runtime.Object {
	out := &list[T, PT]{TypeMeta: l.TypeMeta, ListMeta: *l.ListMeta.DeepCopy(), Items: make([]T, len(l.Items)), read: l.read}
	for i := range l.Items {
		PT(&l.Items[i]).DeepCopyInto(&out.Items[i])
	}
	return out
}

type slimPort struct {
	Name     string          `json:"name"`
	Protocol corev1.Protocol `json:"protocol"`
	Port     int32           `json:"port"`
}

type slimService struct {
	Metadata slimMeta        `json:"metadata"`
	Spec     slimServiceSpec `json:"spec"`
}

type slimServiceSpec struct {
	Type         corev1.ServiceType `json:"type"`
	ClusterIP    string             `json:"clusterIP"`
	ClusterIPs   []string           `json:"clusterIPs"`
	ExternalName string             `json:"externalName"`
	Ports        []slimPort         `json:"ports"`
}

func readService(in *slimService, out *corev1.Service, marks tenantMarks) {
	out.ObjectMeta = in.Metadata.objectMeta(marks)
	out.Spec = corev1.ServiceSpec{Type: in.Spec.Type, ClusterIP: in.Spec.ClusterIP, ClusterIPs: in.Spec.ClusterIPs, ExternalName: in.Spec.ExternalName}
	out.Spec.Ports = make([]corev1.ServicePort, len(in.Spec.Ports))
	for i, p := range in.Spec.Ports {
		out.Spec.Ports[i] = corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port}
	}
}

// slimEndpoints is an Endpoints' ready addresses: not-ready ones are left
// unread.
type slimEndpoints struct {
	Metadata slimMeta     `json:"metadata"`
	Subsets  []slimSubset `json:"subsets"`
}

type slimSubset struct {
	Addresses []slimAddress `json:"addresses"`
	Ports     []slimPort    `json:"ports"`
}

type slimAddress struct {
	IP       string `json:"ip"`
	Hostname string `json:"hostname"`
}

func readEndpoints(in *slimEndpoints, out *corev1.Endpoints, marks tenantMarks) {
	out.ObjectMeta = in.Metadata.objectMeta(marks)
	out.Subsets = make([]corev1.EndpointSubset, len(in.Subsets))
	for i, ss := range in.Subsets {
		o := &out.Subsets[i]
		o.Addresses = make([]corev1.EndpointAddress, len(ss.Addresses))
		for j, a := range ss.Addresses {
			o.Addresses[j] = corev1.EndpointAddress{IP: a.IP, Hostname: a.Hostname}
		}
		o.Ports = make([]corev1.EndpointPort, len(ss.Ports))
		for j, p := range ss.Ports {
			o.Ports[j] = corev1.EndpointPort{Name: p.Name, Protocol: p.Protocol, Port: p.Port}
		}
	}
}

type slimEndpointSlice struct {
	Metadata    slimMeta                `json:"metadata"`
	AddressType discoveryv1.AddressType `json:"addressType"`
	Endpoints   []struct {
		Addresses  []string `json:"addresses"`
		Hostname   *string  `json:"hostname"`
		Conditions struct {
			Ready *bool `json:"ready"`
		} `json:"conditions"`
	} `json:"endpoints"`
	Ports []discoveryv1.EndpointPort `json:"ports"`
}

func readEndpointSlice(in *slimEndpointSlice, out *discoveryv1.EndpointSlice, marks tenantMarks) {
	out.ObjectMeta = in.Metadata.objectMeta(marks)
	out.AddressType, out.Ports = in.AddressType, in.Ports
	out.Endpoints = make([]discoveryv1.Endpoint, len(in.Endpoints))
	for i, e := range in.Endpoints {
		out.Endpoints[i] = discoveryv1.Endpoint{Addresses: e.Addresses, Hostname: e.Hostname, Conditions: discoveryv1.EndpointConditions{Ready: e.Conditions.Ready}}
	}
}

type slimPod struct {
	Metadata slimMeta `json:"metadata"`
	Spec     struct {
		HostNetwork bool `json:"hostNetwork"`
	} `json:"spec"`
	Status struct {
		Phase  corev1.PodPhase `json:"phase"`
		PodIP  string          `json:"podIP"`
		PodIPs []corev1.PodIP  `json:"podIPs"`
	} `json:"status"`
}

// slimPod is a listed pod as the sink takes it (a runtime.Object for the
// list's machinery); a watched one is a corev1.Pod, made a slimPod
// (slimOfPod) where the index reads it.
func (p *slimPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the pod (runtime.Object).
func (p *slimPod) DeepCopyObject() runtime.Object {
	out := new(slimPod)
	p.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the pod into out.
func (p *slimPod) DeepCopyInto(out *slimPod) {
	*out = *p
	out.Status.PodIPs = slices.Clone(p.Status.PodIPs)
}

// tenant is the pod's tenant as tenancy.TenantOf reads a corev1.Pod that
// objectMeta made.
func (m *slimMeta) tenant() string {
	t := m.Tenant
	if t == "" {
		t = m.Annotations.Tenant
	}
	return tenancy.NormalTenant(t)
}

// slimOfPod is what the index reads of a watched pod.
func slimOfPod(p *corev1.Pod) *slimPod {
	out := &slimPod{Metadata: slimMeta{Name: p.Name, Namespace: p.Namespace, Tenant: tenantOf(p)}}
	out.Spec.HostNetwork = p.Spec.HostNetwork
	out.Status.Phase, out.Status.PodIP, out.Status.PodIPs = p.Status.Phase, p.Status.PodIP, p.Status.PodIPs
	return out
}

type slimNamespace struct {
	Metadata slimMeta `json:"metadata"`
}

func readNamespace(in *slimNamespace, out *corev1.Namespace, marks tenantMarks) {
	out.ObjectMeta = in.Metadata.objectMeta(marks)
}

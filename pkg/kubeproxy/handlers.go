package kubeproxy

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// ServiceHandler receives Service events from every TP. It is upstream
// kube-proxy's config.ServiceHandler with the TP added to each event, so an
// Arktos proxier keeps equal names from different TPs apart.
//
// Events of different TPs arrive concurrently: implementations must be safe
// for concurrent use. Objects are shared with the informer caches: do not
// modify them.
type ServiceHandler interface {
	// OnServiceAdd is called when tp reports a new service.
	OnServiceAdd(tp string, service *corev1.Service)
	// OnServiceUpdate is called when tp reports a changed service.
	OnServiceUpdate(tp string, oldService, service *corev1.Service)
	// OnServiceDelete is called when tp reports a deleted service, and for
	// every service of a TP removed from the configuration.
	OnServiceDelete(tp string, service *corev1.Service)
	// OnServiceSynced is called once, when every TP's services have synced.
	OnServiceSynced()
}

// EndpointsHandler receives core/v1 Endpoints events from every TP that
// serves its service endpoints that way (Arktos serves nothing else); it is
// upstream kube-proxy's config.EndpointsHandler with the TP added. The
// concurrency rules of ServiceHandler apply.
type EndpointsHandler interface {
	// OnEndpointsAdd is called when tp reports new endpoints.
	OnEndpointsAdd(tp string, endpoints *corev1.Endpoints)
	// OnEndpointsUpdate is called when tp reports changed endpoints.
	OnEndpointsUpdate(tp string, oldEndpoints, endpoints *corev1.Endpoints)
	// OnEndpointsDelete is called when tp reports deleted endpoints.
	OnEndpointsDelete(tp string, endpoints *corev1.Endpoints)
	// OnEndpointsSynced is called once, when every TP's endpoints (in
	// whichever form it serves them) have synced.
	OnEndpointsSynced()
}

// EndpointSliceHandler receives EndpointSlice events from every TP that
// serves discovery.k8s.io/v1 (upstream Kubernetes); it is
// upstream kube-proxy's config.EndpointSliceHandler with the TP added. The
// concurrency rules of ServiceHandler apply.
type EndpointSliceHandler interface {
	// OnEndpointSliceAdd is called when tp reports a new slice.
	OnEndpointSliceAdd(tp string, slice *discoveryv1.EndpointSlice)
	// OnEndpointSliceUpdate is called when tp reports a changed slice.
	OnEndpointSliceUpdate(tp string, oldSlice, slice *discoveryv1.EndpointSlice)
	// OnEndpointSliceDelete is called when tp reports a deleted slice.
	OnEndpointSliceDelete(tp string, slice *discoveryv1.EndpointSlice)
	// OnEndpointSlicesSynced is called once, when every TP's endpoints (in
	// whichever form it serves them) have synced.
	OnEndpointSlicesSynced()
}

// TenantPartitions says which TP a regular tenant lives in.
// *tporigin.Tracker implements it.
type TenantPartitions interface {
	// PartitionOfTenant returns the TP of tenant, and false when unknown.
	PartitionOfTenant(tenant string) (partition string, ok bool)
}

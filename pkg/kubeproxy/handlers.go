/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kubeproxy

// ServiceHandler receives service events from every TP. Its shape is
// Arktos's config.ServiceHandler (pkg/proxy/config/config.go): the TP comes
// last, as the int tenantPartitionId, and synced is reported per TP. The
// records are the core's plain values instead of *v1.Service.
//
// Events of different TPs arrive concurrently (one informer per TP, as in
// Arktos's kube-proxy): implementations must be safe for concurrent use.
// Records may be shared among handlers: do not modify them.
type ServiceHandler interface {
	// OnServiceAdd is called when TP tenantPartitionId reports a new
	// service.
	OnServiceAdd(service *Service, tenantPartitionId int)
	// OnServiceUpdate is called when TP tenantPartitionId reports a changed
	// service.
	OnServiceUpdate(oldService, service *Service, tenantPartitionId int)
	// OnServiceDelete is called when TP tenantPartitionId reports a
	// deleted service, and for every service of a TP removed from the
	// configuration.
	OnServiceDelete(service *Service, tenantPartitionId int)
	// OnServiceSynced is called once per TP: when the TP's initial list of
	// services has been delivered, or when the caller stops waiting for it
	// (a sync timeout passed, the TP was removed).
	OnServiceSynced(tenantPartitionId int)
}

// EndpointsHandler receives endpoints events from every TP: core/v1
// Endpoints (all Arktos serves) and, from TPs that serve them,
// EndpointSlices, both as Endpoints records. Its shape is Arktos's
// config.EndpointsHandler; the rules of ServiceHandler apply.
type EndpointsHandler interface {
	// OnEndpointsAdd is called when TP tenantPartitionId reports a new
	// endpoints object.
	OnEndpointsAdd(endpoints *Endpoints, tenantPartitionId int)
	// OnEndpointsUpdate is called when TP tenantPartitionId reports a
	// changed endpoints object.
	OnEndpointsUpdate(oldEndpoints, endpoints *Endpoints, tenantPartitionId int)
	// OnEndpointsDelete is called when TP tenantPartitionId reports a
	// deleted endpoints object, and for every one of a TP removed from the
	// configuration.
	OnEndpointsDelete(endpoints *Endpoints, tenantPartitionId int)
	// OnEndpointsSynced is called once per TP, as OnServiceSynced.
	OnEndpointsSynced(tenantPartitionId int)
}

// TenantPartitions says which TP a regular tenant lives in. pkg/tporigin's
// tracker knows it by TP name; Partitions.Tenants turns that into
// tenantPartitionIds.
type TenantPartitions interface {
	// PartitionOfTenant returns the tenantPartitionId of the TP tenant
	// lives in, and false when unknown.
	PartitionOfTenant(tenant string) (tenantPartitionId int, ok bool)
}

// Package kubeletcache serves pods' configmaps and secrets in Arktos
// scale-out, where a node's pods come from several tenant partitions (TPs)
// and the same tenant/namespace/name can exist in two of them. It is shaped
// like Arktos's kubelet configmap and secret managers: RegisterPod,
// UnregisterPod, GetConfigMap(tenant, namespace, name, podUID) and
// GetSecret(tenant, namespace, name, podUID). Each of the three upstream
// strategies is its own type: Get (getter, get.go: ask the TP every time),
// Cache (ttlCache, cache.go: keep an answer for a TTL) and Watch (watcher,
// watch.go: one reflector per object, metadata.name field selector).
//
// It is not a core: it reads TPs through client-go (pkg/partition,
// pkg/informer). Where an object lives for a pod is the core's decision,
// tporigin.ClientChooser.ObjectKey, which an Arktos kubelet's own managers
// can call too.
//
// Invariants:
//   - Every object is keyed by TP, tenant, namespace and name, and is fetched
//     from the TP of the pod that references it: the pod's recorded origin
//     (pkg/tporigin), else for a regular tenant its tenant's TP. A pod whose
//     objects cannot be placed so is an error at RegisterPod, and a read for
//     a pod whose origin is no longer known fails (tporigin.ErrUnknownPod);
//     there is no default TP.
//   - Reading for a pod that is not registered, or an object the pod does
//     not reference in its own tenant and namespace, is a clear error.
//   - When a TP cannot be reached, the last known object is served and
//     Freshness (and the metrics) say how old it is and why. NotFound from
//     the TP stays NotFound; it is never masked by an older object. A TP
//     that failed within SyncTimeout (by the partition's health, which every
//     request to it updates) is not asked again meanwhile, so reads do not
//     each wait on a dead TP.
//   - A reflector runs only while some registered pod references its object:
//     UnregisterPod of the last such pod stops it. An immutable object stops
//     its reflector once listed. Run stops reflectors idle for MaxIdle; the
//     next read restarts them.
//   - Objects returned are shared with the cache and must not be modified.
//   - Construction starts nothing. Reflectors start at RegisterPod (Watch)
//     and stop at UnregisterPod, RecycleIdle or Close.
package kubeletcache

// Package partition is the set of tenant partitions (TPs) a node component
// talks to. It builds one client per TP from Arktos's
// --tenant-server-kubeconfig flag, tracks each TP's health, and says when the
// consumers reading a TP have synced it.
//
// It keeps no caches of its own: consumers list and watch through
// pkg/informer (Arktos's /tenants/all/ paths, stores keyed by tenant) and
// register what they read with Partition.TrackSynced.
//
// A TP's state changes are logged, one klog line each to Start's context's
// logger, and counted in tpkit_partition_transitions_total{partition,to}:
// synced (the first time every consumer has listed it), stale (synced, and
// then a request failed: the line carries that error) and recovered (a
// stale TP answered again). Failing retries while a TP is stale log
// nothing more.
//
// Invariants:
//   - A Set's partitions never change after New; each has a unique Name and its
//     Index is its position in the flag.
//   - Every client decodes Arktos JSON through pkg/tenancy/k8s's WrapConfig, so
//     tenancy.TenantOf works on every object a list or watch delivers.
//   - A TP is synced only when every check registered on it is true; a TP
//     nothing reads never is. AllSynced is true only when every TP has synced.
//     An unreachable TP does not block the others: WaitForSync returns after a
//     bounded wait, feeds keep retrying, and Statuses reports the laggard.
//   - Nothing starts a goroutine before Start.
package partition

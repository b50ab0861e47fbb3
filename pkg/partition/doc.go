// Package partition is the set of tenant partitions (TPs) a node component
// talks to. It builds one client and one shared informer factory per TP from
// Arktos's --tenant-server-kubeconfig flag, and tracks each TP's health.
//
// Invariants:
//   - A Set's partitions never change after New; each has a unique Name and its
//     Index is its position in the flag.
//   - Every client decodes Arktos JSON through tenancy.WrapConfig, so
//     tenancy.TenantOf works on every object an informer delivers.
//   - AllSynced is true only when every TP has synced. An unreachable TP does
//     not block the others: WaitForSync returns after a bounded wait, informers
//     keep retrying, and Statuses reports the laggard.
//   - Nothing starts a goroutine before Start.
package partition

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

// Package tporigin records which tenant partition (TP) each pod, service and
// endpoints object came from, by UID, and which TP each regular tenant lives
// in, and keeps the UID map in a bbolt file so that a restarted node
// component knows every pod's TP before any TP is reachable.
//
// It is a core: it needs only the standard library, bbolt and pkg/tenancy,
// uses only the language and standard library of Go 1.13 (Arktos builds
// with Go 1.13.9) and builds against bbolt v1.3.3 (Arktos's pin), so an
// Arktos kubelet can vendor it. UIDs are plain strings (an Arktos caller converts
// its types.UID with string(uid)), logging goes to Options.Logger
// (pkg/corelog), and the
// counters are values (Stats). The client-go feeds, the flags, the
// Prometheus collector and the klog logger are its adapter,
// testbed/tporigink8s.
//
// Arktos's kubelet kept this map in memory (kubeclientmanager) and fell
// back to TP 0 for an unknown UID, which sent status updates and fetched
// secrets from the wrong partition. Here:
//   - A UID keeps its first origin. The same UID from another TP is a
//     conflict: counted (Stats.UIDConflicts), logged once per UID and TP,
//     never an overwrite. If the origin TP deletes it while another TP still
//     reports it, that TP becomes the origin.
//   - An unknown UID is not found. There is no default TP: ClientChooser's
//     PickClient, PickClientOf and ObjectKey, the kubelet's entry points
//     (kubelet.go), return an error wrapping ErrUnknownPod.
//   - A delete from the origin TP forgets the UID; after a TP's full sync,
//     Prune forgets what that TP no longer reports.
//   - A regular tenant's TP is its static entry, else where its objects were
//     seen. A tenant seen in two TPs is a conflict: counted, logged, and
//     answered deterministically with the first in flag order.
//
// Where origins come from: the kubelet's pod sources, each of which is one
// TP, record them as they deliver pods (ClientChooser.Record), so the
// origin is known before the pod is synced; tpkit's own programs feed the
// tracker from list/watches of every TP instead (testbed/tporigink8s Wire).
//
// Durability and crashes (with Options.Path set):
//   - Observe and Forget change memory at once and queue the change. A change
//     is durable (committed by bbolt and fsynced) when a later Flush returns,
//     or when Record returns: that is the acknowledgement. Run commits queued
//     changes in batches after Options.BatchDelay; concurrent Flush callers
//     share one commit (group commit), so a batch costs one fsync.
//   - A crash (SIGKILL, power loss) loses only changes not yet acknowledged;
//     bbolt's copy-on-write pages and two meta pages mean the file opens at the
//     last completed commit. Lost changes are re-learned from the TPs.
//   - The file has a magic string and SchemaVersion. A file bbolt rejects,
//     that panics bbolt, that another program wrote, of another version, or
//     with a record that does not decode, is a *CorruptError naming the file:
//     never a panic and never an empty map. Options.Rebuild (which the
//     patched kubelet sets) moves it aside, logs its new name and starts
//     empty, to be refilled from the TPs. Before bbolt maps
//     the file, its meta page, size, root and freelist are checked
//     (filecheck.go): bbolt trusts them, and a file cut short would make
//     its first read a SIGBUS that kills the process, while a bad page read
//     inside bbolt.Open would leave its mapping, and so its lock, in the
//     process. Later faults and bbolt panics are recovered, and the
//     database closed, so the lock goes with it.
//   - The file stores TP names, not positions. With Options.Partitions set,
//     the records of a TP not among them (nor among StaticTenants' TPs) are
//     dropped at Open, from memory and file, logged and counted in
//     Stats.Pruned: that TP was removed. A renamed TP is a removed one plus
//     a new one, whose origins are learned from it again. A stored name that
//     is not a valid TP name is a *CorruptError.
//   - The file stays the size its origins need. bbolt reuses the pages a
//     commit frees (nothing here holds a read transaction open), so pod
//     churn does not grow it (make bench-origin: 36,000 replacements of a
//     node's 110 pods leave it at 14 pages); but bbolt never gives pages
//     back, so Open rewrites a file that once held far more than it does
//     now (above 1 MiB and 4 times its data) into a copy, synced, renamed
//     over it (compact.go). A failed copy is logged and the file kept.
//   - One process owns the file (bbolt's flock); a second waits
//     Options.LockTimeout and fails with an error naming the file.
//
// The files, by job: tracker.go opens a tracker and answers lookups;
// reconcile.go applies what the TPs report (Observe, Forget, Prune, the
// conflicts and tenant answers); index.go and table.go are the lock-free
// UID table; store.go is the bbolt file, compact.go its compaction at
// Open and commit.go the group commits to it; stats.go the counters; kubelet.go the kubelet's entry points.
//
// Concurrency: OriginOf (and so PickClient) takes no lock for UUID-shaped
// UIDs (a seqlock over a table of atomic words; see uuidTable), Origin and
// PartitionOfTenant take a read lock; none of them allocates. Mutations are
// serialised with the delivery of their changes to subscribers, so
// subscribers see changes in order. Nothing starts a goroutine except Run
// (group commits).
package tporigin

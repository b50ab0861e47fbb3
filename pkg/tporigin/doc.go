// Package tporigin records which tenant partition (TP) each pod, service and
// endpointslice came from, by UID, and which TP each regular tenant lives in,
// and keeps the UID map in a bbolt file so that a restarted node component
// knows every pod's TP before any TP is reachable.
//
// Arktos kept this map in memory and fell back to TP 0 for an unknown UID,
// which fetched secrets from the wrong partition. Here:
//   - A UID keeps its first origin. The same UID from another TP is a
//     conflict: counted (tpkit_tporigin_uid_conflicts_total), logged once per
//     UID and TP, never an overwrite. If the origin TP deletes it while another
//     TP still reports it, that TP becomes the origin.
//   - An unknown UID is not found. There is no default TP.
//   - A delete from the origin TP forgets the UID; after a TP's full sync,
//     Prune forgets what that TP no longer reports.
//   - A regular tenant's TP is its static entry, else where its objects were
//     seen. A tenant seen in two TPs is a conflict: a metric, a log line, and
//     the deterministic answer "first in flag order".
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
//     never a panic and never an empty map. Options.Rebuild moves it aside
//     and starts empty, to be refilled from the TPs. (When bbolt panics on
//     a file, its mapping of that file, and so its lock, stays in the
//     process: rebuild in the same Open call or after a restart.)
//   - One process owns the file (bbolt's flock); a second waits
//     Options.LockTimeout and fails with an error naming the file.
//
// Concurrency: OriginOf takes no lock for UUID-shaped UIDs (a seqlock over
// a table of atomic words; see uuidTable), Origin and PartitionOfTenant take
// a read lock; none of them allocates. Mutations are serialised with the delivery of their
// changes to subscribers, so subscribers see changes in order. Nothing starts
// a goroutine except Run (group commits) and Wiring.Start (one reflector per TP and kind).
package tporigin

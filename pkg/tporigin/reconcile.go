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

package tporigin

import (
	"fmt"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Reconciling what the TPs report: Observe, Forget and Prune, the
// first-origin-wins rule with its conflicts, and where regular tenants live.

func normTenant(tenant string) string {
	if tenancy.IsSystem(tenant) {
		return ""
	}
	return tenant
}

func validate(o Observation) error {
	if o.UID == "" {
		return fmt.Errorf("tporigin: observation has no UID")
	}
	if !o.Kind.valid() {
		return fmt.Errorf("tporigin: UID %q: unknown kind %d", o.UID, o.Kind)
	}
	if err := tenancy.ValidatePartitionName(o.Partition); err != nil {
		return fmt.Errorf("tporigin: UID %q: %w", o.UID, err)
	}
	if len(o.Partition) > 255 {
		return fmt.Errorf("tporigin: UID %q: partition name is longer than 255 bytes", o.UID)
	}
	if t := normTenant(o.Tenant); t != "" {
		if err := tenancy.ValidateTenantName(t); err != nil {
			return fmt.Errorf("tporigin: UID %q: %w", o.UID, err)
		}
	}
	return nil
}

// Observe records that o.UID came from o.Partition. A UID keeps its first
// origin: the same UID reported by another TP is a Conflict, counted and
// logged, and changes nothing. The change is in memory at once and queued
// for the file; it is durable once Flush returns (or Record is used).
func (t *Tracker) Observe(o Observation) (Result, error) {
	if err := validate(o); err != nil {
		return 0, err
	}
	tenant := normTenant(o.Tenant)
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return 0, ErrClosed
	}
	if e, ok := t.entries.get(o.UID); ok {
		if t.tpNames[e.tp] == o.Partition {
			t.mu.Unlock()
			return Known, nil
		}
		t.noteConflictLocked(o.UID, e, o, tenant)
		t.mu.Unlock()
		return Conflict, nil
	}
	e := entry{tp: t.internTP(o.Partition), kind: o.Kind, tenant: t.tenantID(tenant)}
	changes := t.addLocked(o.UID, e, nil)
	t.mu.Unlock()
	t.notify(changes)
	return Recorded, nil
}

// tenantID interns tenant; "" is the system tenant.
func (t *Tracker) tenantID(tenant string) uint32 {
	if tenant == "" {
		return 0
	}
	return t.internTenant(tenant)
}

func (t *Tracker) addLocked(uid string, e entry, changes []Change) []Change {
	t.entries.set(uid, e)
	t.counts[e.tp][e.kind]++
	if t.opts.Path != "" {
		t.q.enqueue(uid, encodeRecord(record{kind: e.kind, partition: t.tpNames[e.tp], tenant: normTenant(t.tenNames[e.tenant])}))
	}
	changes = append(changes, Change{Op: OriginAdded, UID: uid, Kind: e.kind, Partition: t.tpNames[e.tp], Tenant: t.tenNames[e.tenant]})
	if e.tenant != 0 {
		changes = t.tenantCountChanges(t.tenNames[e.tenant], e.tp, +1, changes)
	}
	return changes
}

func (t *Tracker) removeLocked(uid string, e entry, changes []Change) []Change {
	t.entries.del(uid)
	t.counts[e.tp][e.kind]--
	if t.opts.Path != "" {
		t.q.enqueue(uid, nil)
	}
	changes = append(changes, Change{Op: OriginRemoved, UID: uid, Kind: e.kind, Partition: t.tpNames[e.tp], Tenant: t.tenNames[e.tenant]})
	if e.tenant != 0 {
		changes = t.tenantCountChanges(t.tenNames[e.tenant], e.tp, -1, changes)
	}
	return changes
}

func (t *Tracker) noteConflictLocked(uid string, kept entry, o Observation, tenant string) {
	tp := t.internTP(o.Partition)
	others := t.conflicts[uid]
	for _, c := range others {
		if c.tp == tp {
			return // counted already
		}
	}
	t.conflicts[uid] = append(others, entry{tp: tp, kind: o.Kind, tenant: t.tenantID(tenant)})
	t.stats.uidConflict(o.Partition)
	t.log.Warningf("Same UID %s (%v) reported by a second tenant partition %s; keeping the first origin %s",
		uid, o.Kind, o.Partition, t.tpNames[kept.tp])
}

// Forget removes uid's origin if it is partition: call it when that TP
// deletes the object. A delete from a TP that is not the origin only clears
// that TP's conflict. When the origin forgets a UID that another TP also
// reports, that TP becomes the origin. Forget reports whether the origin was
// removed.
func (t *Tracker) Forget(uid string, partition string) (bool, error) {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return false, ErrClosed
	}
	changes, removed := t.forgetLocked(uid, partition, nil)
	t.mu.Unlock()
	t.notify(changes)
	return removed, nil
}

func (t *Tracker) forgetLocked(uid, partition string, changes []Change) ([]Change, bool) {
	tp, ok := t.tpIDs[partition]
	if !ok {
		return changes, false
	}
	e, ok := t.entries.get(uid)
	if !ok {
		return changes, false
	}
	if e.tp != tp {
		t.dropConflictLocked(uid, func(c entry) bool { return c.tp == tp })
		return changes, false
	}
	changes = t.removeLocked(uid, e, changes)
	if next, ok := t.dropConflictLocked(uid, t.firstConflictLocked(uid)); ok {
		t.log.Infof("Origin TP %s deleted UID %s, which another TP also reports; %s is now its origin",
			partition, uid, t.tpNames[next.tp])
		changes = t.addLocked(uid, next, changes)
	}
	return changes, true
}

// firstConflictLocked matches the TP, of those that also report uid, that
// comes first in flag order: it becomes the origin when the origin forgets
// uid.
func (t *Tracker) firstConflictLocked(uid string) func(entry) bool {
	others := t.conflicts[uid]
	if len(others) == 0 {
		return func(entry) bool { return false }
	}
	best := others[0].tp
	for _, c := range others[1:] {
		if t.lessTP(c.tp, best) {
			best = c.tp
		}
	}
	return func(c entry) bool { return c.tp == best }
}

// dropConflictLocked removes the first of uid's conflicting reports that
// match accepts, and returns it.
func (t *Tracker) dropConflictLocked(uid string, match func(entry) bool) (entry, bool) {
	others := t.conflicts[uid]
	for i, c := range others {
		if !match(c) {
			continue
		}
		others = append(others[:i:i], others[i+1:]...)
		if len(others) == 0 {
			delete(t.conflicts, uid)
		} else {
			t.conflicts[uid] = others
		}
		return c, true
	}
	return entry{}, false
}

// Prune removes the origins of kind from partition for which live returns
// false. Call it after a full sync of that TP, with live answering from the
// synced informer, so that objects deleted while the node was not watching
// are forgotten too. live is called without the tracker's locks held, but
// must not call the tracker's mutating methods. Prune returns the number of
// origins removed.
func (t *Tracker) Prune(partition string, kind Kind, live func(uid string) bool) (int, error) {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	candidates, err := t.pruneCandidates(partition, kind)
	if err != nil {
		return 0, err
	}
	// writeMu is held: nothing else mutates, so the candidates stay valid
	// while live is asked without the read lock.
	var gone []string
	for _, uid := range candidates {
		if !live(uid) {
			gone = append(gone, uid)
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	var changes []Change
	removed := 0
	t.mu.Lock()
	for _, uid := range gone {
		var ok bool
		if changes, ok = t.forgetLocked(uid, partition, changes); ok {
			removed++
		}
	}
	t.mu.Unlock()
	t.stats.pruned(partition, removed)
	t.log.Infof("Pruned %d origins (%v) that tenant partition %s no longer reports", removed, kind, partition)
	t.notify(changes)
	return removed, nil
}

// pruneCandidates lists the UIDs partition reports as kind: its origins,
// then the UIDs whose origin is elsewhere but that it reports too.
func (t *Tracker) pruneCandidates(partition string, kind Kind) ([]string, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return nil, ErrClosed
	}
	tp, ok := t.tpIDs[partition]
	if !ok {
		return nil, nil
	}
	var candidates, conflicted []string
	t.entries.each(func(uid string, e entry) {
		if e.tp == tp && e.kind == kind {
			candidates = append(candidates, uid)
		}
	})
	for uid, others := range t.conflicts {
		for _, c := range others {
			if c.tp == tp && c.kind == kind {
				conflicted = append(conflicted, uid)
			}
		}
	}
	return append(candidates, conflicted...), nil
}

func (t *Tracker) tenantCountChanges(tenant string, tp uint16, delta int, changes []Change) []Change {
	st := t.tenants[tenant]
	if st == nil {
		st = &tenantState{counts: make(map[uint16]int, 1)}
		t.tenants[tenant] = st
	}
	st.counts[tp] += delta
	if st.counts[tp] <= 0 {
		delete(st.counts, tp)
	}
	before := st.answer
	t.updateTenantLocked(tenant)
	if after := t.tenantAnswer(tenant); after != before {
		changes = append(changes, Change{Op: TenantPartitionChanged, Tenant: tenant, Partition: after})
	}
	return changes
}

func (t *Tracker) tenantAnswer(tenant string) string {
	if st := t.tenants[tenant]; st != nil {
		return st.answer
	}
	return ""
}

// updateTenantLocked recomputes a tenant's answer and conflict state.
func (t *Tracker) updateTenantLocked(tenant string) {
	st := t.tenants[tenant]
	static, hasStatic := t.opts.StaticTenants[tenant]
	var seen []uint16
	for tp := range st.counts {
		seen = append(seen, tp)
	}
	// tenancy.TenantHome takes positions in flag order: seen's, sorted,
	// and the static TP's (one past them when it holds nothing).
	t.sortTPs(seen)
	held := make([]int, len(seen))
	staticPos := -1
	for i, tp := range seen {
		held[i] = i
		if hasStatic && t.tpNames[tp] == static {
			staticPos = i
		}
	}
	if hasStatic && staticPos < 0 {
		staticPos = len(seen)
	}
	home, conflict := tenancy.TenantHome(held, staticPos)
	switch {
	case home < 0:
		delete(t.tenants, tenant)
		if st.conflict {
			t.tenantsInConflict--
		}
		return
	case home == len(seen):
		st.answer = static
	default:
		st.answer = t.tpNames[seen[home]]
	}
	if conflict == st.conflict {
		return
	}
	st.conflict = conflict
	if !conflict {
		t.tenantsInConflict--
		return
	}
	t.tenantsInConflict++
	t.stats.tenantConflict()
	names := make([]string, len(seen))
	for i, tp := range seen {
		names[i] = t.tpNames[tp]
	}
	t.log.Warningf("Regular tenant %s seen in more than one tenant partition %v (static %q); answering %s",
		tenant, names, static, st.answer)
}

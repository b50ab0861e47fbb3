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
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tpkit-dev/tpkit/pkg/corelog"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Tracker maps the UIDs of pods, services and endpoints to the tenant
// partition they came from, and regular tenants to their TP. See the package
// documentation for its guarantees. Its work is spread over files by job:
// this one opens it and answers lookups, reconcile.go applies observations,
// table.go and index.go hold the lock-free lookup table, store.go the bbolt
// file and commit.go the group commits to it.
type Tracker struct {
	opts Options
	log  corelog.Logger
	db   *bolt.DB // nil without a file

	mu        sync.RWMutex
	entries   index
	tpNames   []string
	tpNamesRO atomic.Value // []string: a copy of tpNames for lock-free readers
	tpIDs     map[string]uint16
	tpRank    []int
	tenNames  []string
	tenIDs    map[string]uint32
	tenants   map[string]*tenantState
	conflicts map[string][]entry // UID -> other TPs that report it too
	counts    [][numKinds]int    // per TP id and kind
	closed    bool
	// tenantsInConflict is the number of regular tenants whose conflict
	// flag is set (guarded by mu).
	tenantsInConflict int

	// writeMu serialises mutations with the delivery of their changes, so
	// subscribers see changes in the order they were made.
	writeMu sync.Mutex
	subs    map[int]func(Change)
	nextSub int

	q     queue
	stats counters
}

// Open loads the database file named by o.Path (creating it if missing) and
// returns a tracker that knows every origin in it. With an empty o.Path the
// tracker keeps origins in memory only.
//
// A file that is damaged, foreign or of another schema version is a
// *CorruptError naming the file; with o.Rebuild the file is moved aside
// instead (its new name is logged) and the tracker starts empty, to be
// refilled from the TPs. A file far larger than the origins it holds (it
// once held many more) is rewritten compactly (compact.go). Open starts no
// goroutine: call Run for timed group commits, and Close at the end.
func Open(o Options) (*Tracker, error) {
	o.setDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	t := newTracker(o)
	if o.Path == "" {
		return t, nil
	}
	start := time.Now()
	db, err := t.openAndLoad()
	if err != nil {
		return nil, err
	}
	if db, err = t.compactIfSparse(db); err != nil {
		return nil, err
	}
	t.db = db
	t.log.Infof("Loaded TP-origin database %s: %d entries in %v", o.Path, t.entries.len(), time.Since(start).Round(time.Millisecond))
	return t, nil
}

// newTracker is an empty tracker that knows o's partitions and static
// tenants.
func newTracker(o Options) *Tracker {
	// Own copies: the caller may reuse its slices and maps.
	o.Partitions = append([]string(nil), o.Partitions...)
	static := make(map[string]string, len(o.StaticTenants))
	for k, v := range o.StaticTenants {
		static[k] = v
	}
	o.StaticTenants = static
	t := &Tracker{
		opts:      o,
		log:       corelog.OrDiscard(o.Logger),
		entries:   newIndex(),
		tpIDs:     make(map[string]uint16),
		tenNames:  []string{tenancy.SystemTenant},
		tenIDs:    map[string]uint32{tenancy.SystemTenant: 0},
		tenants:   make(map[string]*tenantState),
		conflicts: make(map[string][]entry),
		subs:      make(map[int]func(Change)),
	}
	t.stats.init()
	t.q.init()
	for _, p := range o.Partitions {
		t.internTP(p)
	}
	for tenant, tp := range o.StaticTenants {
		t.internTP(tp)
		t.tenants[tenant] = &tenantState{counts: map[uint16]int{}}
	}
	for tenant := range o.StaticTenants {
		t.updateTenantLocked(tenant)
	}
	return t
}

// openAndLoad opens the file and loads it; with Options.Rebuild a file
// that is unusable is moved aside and replaced by an empty one.
func (t *Tracker) openAndLoad() (*bolt.DB, error) {
	o := t.opts
	db, err := openFile(o.Path, o.LockTimeout)
	if err == nil {
		err = t.load(db)
		if err != nil {
			closeQuietly(db)
		}
	}
	var ce *CorruptError
	if errors.As(err, &ce) && o.Rebuild {
		aside, merr := moveAside(o.Path, time.Now())
		if merr != nil {
			return nil, fmt.Errorf("%v; and rebuilding failed: %w", err, merr)
		}
		t.log.Errorf("Moved the unusable TP-origin database %s aside to %s; rebuilding it from the tenant partitions: %v", o.Path, aside, err)
		t.resetState()
		db, err = openFile(o.Path, o.LockTimeout)
	}
	return db, err
}

// resetState forgets a partial load before a rebuild.
func (t *Tracker) resetState() {
	t.entries = newIndex()
	for i := range t.counts {
		t.counts[i] = [numKinds]int{}
	}
	for _, st := range t.tenants {
		st.counts = make(map[uint16]int)
	}
	for tenant := range t.tenants {
		t.updateTenantLocked(tenant)
	}
}

// load reads every record of db into memory.
func (t *Tracker) load(db *bolt.DB) error {
	sizeHint := func(n int) {
		t.entries.uuids.reserve(n)
	}
	// With partitions configured, a record of any other TP is stale: that
	// TP was removed, or renamed, which is a removal plus a new TP whose
	// origins are learned from it again. Such records are dropped.
	var stale map[string][]string // TP -> UIDs
	record := func(uid, partition, tenant []byte, kind Kind) error {
		if _, known := t.tpIDs[string(partition)]; known || len(t.opts.Partitions) == 0 {
			return t.loadRecord(uid, partition, tenant, kind)
		}
		if err := tenancy.ValidatePartitionName(string(partition)); err != nil {
			return err // damage, not a removed TP
		}
		if stale == nil {
			stale = make(map[string][]string)
		}
		stale[string(partition)] = append(stale[string(partition)], string(uid))
		return nil
	}
	if err := loadFile(db, t.opts.Path, sizeHint, record); err != nil {
		return err
	}
	if err := t.dropStale(db, stale); err != nil {
		return err
	}
	// Answers and conflicts once, after every count is in.
	for tenant := range t.tenants {
		t.updateTenantLocked(tenant)
	}
	return nil
}

// dropStale deletes the records of TPs that are not configured, one commit
// per TP, and counts them as pruned.
func (t *Tracker) dropStale(db *bolt.DB, stale map[string][]string) error {
	names := make([]string, 0, len(stale))
	for tp := range stale {
		names = append(names, tp)
	}
	sort.Strings(names)
	for _, tp := range names {
		uids := stale[tp]
		batch := make(map[string][]byte, len(uids))
		for _, uid := range uids {
			batch[uid] = nil
		}
		if err := writeBatch(db, batch); err != nil {
			return fmt.Errorf("tporigin: dropping the origins of unconfigured partition %q from %s: %w", tp, t.opts.Path, err)
		}
		t.stats.pruned(tp, len(uids))
		t.log.Warningf("Dropped %d origins of tenant partition %s from %s: it is not one of the configured partitions %v", len(uids), tp, t.opts.Path, t.opts.Partitions)
	}
	return nil
}

// loadRecord adds one record read from the file. It rejects what Observe
// would have rejected, so that a file edited by hand or damaged where bbolt
// cannot see is still reported. Names are few: each is checked once, when
// it is interned. Map lookups with string(b) do not allocate.
func (t *Tracker) loadRecord(uid, partition, tenant []byte, kind Kind) error {
	if len(uid) == 0 {
		return errors.New("empty UID")
	}
	tp, ok := t.tpIDs[string(partition)]
	if !ok {
		if err := tenancy.ValidatePartitionName(string(partition)); err != nil {
			return err
		}
		tp = t.internTP(string(partition))
	}
	var ten uint32
	if len(tenant) > 0 {
		if ten, ok = t.tenIDs[string(tenant)]; !ok {
			if err := tenancy.ValidateTenantName(string(tenant)); err != nil {
				return err
			}
			ten = t.internTenant(string(tenant))
		}
	}
	t.entries.setBytes(uid, entry{tp: tp, kind: kind, tenant: ten})
	t.counts[tp][kind]++
	if ten != 0 {
		name := t.tenNames[ten]
		st := t.tenants[name]
		if st == nil {
			st = &tenantState{counts: make(map[uint16]int, 1)}
			t.tenants[name] = st
		}
		st.counts[tp]++
	}
	return nil
}

func (t *Tracker) internTP(name string) uint16 {
	if id, ok := t.tpIDs[name]; ok {
		return id
	}
	id := uint16(len(t.tpNames))
	t.tpNames = append(t.tpNames, name)
	ro := append([]string(nil), t.tpNames...)
	t.tpNamesRO.Store(ro) // for OriginOf, which reads without t.mu
	t.tpIDs[name] = id
	rank := indexOf(t.opts.Partitions, name)
	if rank < 0 {
		rank = len(t.opts.Partitions) + 1<<16 // unknown TPs rank after known ones, then by name
	}
	t.tpRank = append(t.tpRank, rank)
	t.counts = append(t.counts, [numKinds]int{})
	return id
}

func (t *Tracker) internTenant(name string) uint32 {
	if id, ok := t.tenIDs[name]; ok {
		return id
	}
	id := uint32(len(t.tenNames))
	t.tenNames = append(t.tenNames, name)
	t.tenIDs[name] = id
	return id
}

// lessTP orders TPs for conflict answers: flag order, then name.
func (t *Tracker) lessTP(a, b uint16) bool {
	if t.tpRank[a] != t.tpRank[b] {
		return t.tpRank[a] < t.tpRank[b]
	}
	return strings.Compare(t.tpNames[a], t.tpNames[b]) < 0
}

// sortTPs sorts ids by lessTP.
func (t *Tracker) sortTPs(ids []uint16) {
	sort.Slice(ids, func(i, j int) bool { return t.lessTP(ids[i], ids[j]) })
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// OriginOf returns the TP that uid came from. found is false for a UID the
// tracker does not know: there is no default TP.
//
// It takes no lock for UUID-shaped UIDs (see uuidTable), so concurrent
// readers do not slow one another down.
func (t *Tracker) OriginOf(uid string) (partition string, found bool) {
	if k, ok := parseUUIDString(uid); ok {
		e, ok := t.entries.uuids.get(k)
		if !ok {
			return "", false
		}
		// Interned before any entry used the id (see internTP).
		return t.tpNamesRO.Load().([]string)[e.tp], true
	}
	t.mu.RLock()
	e, ok := t.entries.other[uid]
	if ok {
		partition = t.tpNames[e.tp]
	}
	t.mu.RUnlock()
	return partition, ok
}

// Origin returns everything known about uid.
func (t *Tracker) Origin(uid string) (Origin, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.entries.get(uid)
	if !ok {
		return Origin{}, false
	}
	return Origin{Partition: t.tpNames[e.tp], Kind: e.kind, Tenant: t.tenNames[e.tenant]}, true
}

// PartitionOfTenant returns the TP of a regular tenant: its static entry
// (Options.StaticTenants) if it has one, else the TP its objects were
// observed in. A tenant observed in several TPs is a conflict (counted,
// logged, and visible in Stats); the answer is then the first of those TPs
// in flag order. The system tenant exists in every TP and has no answer: use
// OriginOf.
func (t *Tracker) PartitionOfTenant(tenant string) (string, bool) {
	if tenancy.IsSystem(tenant) {
		return "", false
	}
	t.mu.RLock()
	st := t.tenants[tenant]
	var answer string
	if st != nil {
		answer = st.answer
	}
	t.mu.RUnlock()
	return answer, answer != ""
}

// Len is the number of known origins.
func (t *Tracker) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.entries.len()
}

// Partitions returns the TPs that have at least one origin, in flag order.
func (t *Tracker) Partitions() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var ids []uint16
	for id, c := range t.counts {
		if c != ([numKinds]int{}) {
			ids = append(ids, uint16(id))
		}
	}
	t.sortTPs(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.tpNames[id]
	}
	return out
}

// Subscribe calls fn with every change from now on, in the order the
// changes were made, until the returned function is called. fn runs on the
// goroutine that made the change, after the change is visible to readers;
// it must be quick and must not call Observe, Forget or Prune.
func (t *Tracker) Subscribe(fn func(Change)) (unsubscribe func()) {
	t.writeMu.Lock()
	id := t.nextSub
	t.nextSub++
	t.subs[id] = fn
	t.writeMu.Unlock()
	return func() {
		t.writeMu.Lock()
		delete(t.subs, id)
		t.writeMu.Unlock()
	}
}

// notify runs with writeMu held.
func (t *Tracker) notify(changes []Change) {
	if len(changes) == 0 || len(t.subs) == 0 {
		return
	}
	ids := make([]int, 0, len(t.subs))
	for id := range t.subs {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, c := range changes {
		for _, id := range ids {
			t.subs[id](c)
		}
	}
}

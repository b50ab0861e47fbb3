package tporigin

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Kind is the kind of object whose origin is tracked.
type Kind uint8

// The tracked kinds. The values are stored in the database file; never
// renumber them.
const (
	KindPod           Kind = 1
	KindService       Kind = 2
	KindEndpointSlice Kind = 3
	KindEndpoints     Kind = 4

	numKinds = 5 // one past the largest kind
)

func (k Kind) valid() bool { return k >= KindPod && k < numKinds }

// String returns the kind's resource name, as used in metric labels.
func (k Kind) String() string {
	switch k {
	case KindPod:
		return "pods"
	case KindService:
		return "services"
	case KindEndpointSlice:
		return "endpointslices"
	case KindEndpoints:
		return "endpoints"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Observation is what an informer reports about one object: its UID, kind,
// the TP it came from, and its tenant ("" or "system" for the system tenant).
type Observation struct {
	UID       types.UID
	Kind      Kind
	Partition string
	Tenant    string
}

// Origin is what the tracker knows about one UID.
type Origin struct {
	Partition string
	Kind      Kind
	// Tenant is the object's tenant; tenancy.SystemTenant for the system
	// tenant.
	Tenant string
}

// Result says what Observe did.
type Result uint8

const (
	// Recorded: the UID was new and now has this origin.
	Recorded Result = iota + 1
	// Known: the UID already had this origin; nothing changed.
	Known
	// Conflict: the UID already had another origin, which is kept. The
	// conflict is counted and logged once per UID and TP.
	Conflict
)

func (r Result) String() string {
	switch r {
	case Recorded:
		return "Recorded"
	case Known:
		return "Known"
	case Conflict:
		return "Conflict"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// Op is the type of a Change.
type Op uint8

const (
	// OriginAdded: UID now has origin Partition.
	OriginAdded Op = iota + 1
	// OriginRemoved: UID, whose origin was Partition, is forgotten.
	OriginRemoved
	// TenantPartitionChanged: PartitionOfTenant(Tenant) now answers
	// Partition ("" when the tenant is no longer known).
	TenantPartitionChanged
)

// Change is one change, as delivered to subscribers.
type Change struct {
	Op        Op
	UID       types.UID
	Kind      Kind
	Partition string
	Tenant    string
}

// ErrClosed is returned by calls on a closed Tracker.
var ErrClosed = errors.New("tporigin: tracker is closed")

// entry is the in-memory form of one origin: 8 bytes, names interned.
type entry struct {
	tp     uint16
	kind   Kind
	tenant uint32 // 0 is the system tenant
}

// tenantState is what is known about where a regular tenant lives.
type tenantState struct {
	counts   map[uint16]int // live origins per TP
	answer   string         // PartitionOfTenant's answer; "" if none
	conflict bool
}

// Tracker maps the UIDs of pods, services and endpointslices to the tenant
// partition they came from, and regular tenants to their TP. See the package
// documentation for its guarantees.
type Tracker struct {
	opts Options
	db   *bolt.DB // nil without a file

	mu        sync.RWMutex
	entries   index
	tpNames   []string
	tpNamesRO atomic.Pointer[[]string] // copy of tpNames for lock-free readers
	tpIDs     map[string]uint16
	tpRank    []int
	tenNames  []string
	tenIDs    map[string]uint32
	tenants   map[string]*tenantState
	conflicts map[string][]entry // UID -> other TPs that report it too
	counts    [][numKinds]int    // per TP id and kind
	closed    bool

	// writeMu serialises mutations with the delivery of their changes, so
	// subscribers see changes in the order they were made.
	writeMu sync.Mutex
	subs    map[int]func(Change)
	nextSub int

	q queue
	m *metrics
}

// Open loads the database file named by o.Path (creating it if missing) and
// returns a tracker that knows every origin in it. With an empty o.Path the
// tracker keeps origins in memory only.
//
// A file that is damaged, foreign or of another schema version is a
// *CorruptError naming the file; with o.Rebuild the file is moved aside
// instead (its new name is logged) and the tracker starts empty, to be
// refilled from the TPs. Open starts no goroutine: call Run for timed group
// commits, and Close at the end.
func Open(o Options) (*Tracker, error) {
	o.setDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	// Own copies: the caller may reuse its slices and maps.
	o.Partitions = slices.Clone(o.Partitions)
	o.StaticTenants = maps.Clone(o.StaticTenants)
	t := &Tracker{
		opts:      o,
		entries:   newIndex(),
		tpIDs:     make(map[string]uint16),
		tenNames:  []string{tenancy.SystemTenant},
		tenIDs:    map[string]uint32{tenancy.SystemTenant: 0},
		tenants:   make(map[string]*tenantState),
		conflicts: make(map[string][]entry),
		subs:      make(map[int]func(Change)),
		m:         newMetrics(),
	}
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
	if o.Path == "" {
		return t, nil
	}
	start := time.Now()
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
		klog.ErrorS(err, "Moved the unusable TP-origin database aside; rebuilding it from the tenant partitions", "path", o.Path, "movedTo", aside)
		t.resetState(o)
		db, err = openFile(o.Path, o.LockTimeout)
	}
	if err != nil {
		return nil, err
	}
	t.db = db
	klog.InfoS("Loaded TP-origin database", "path", o.Path, "entries", t.entries.len(), "duration", time.Since(start).Round(time.Millisecond))
	return t, nil
}

// resetState forgets a partial load before a rebuild.
func (t *Tracker) resetState(o Options) {
	t.entries = newIndex()
	for i := range t.counts {
		t.counts[i] = [numKinds]int{}
	}
	for _, st := range t.tenants {
		clear(st.counts)
	}
	for tenant := range t.tenants {
		t.updateTenantLocked(tenant)
	}
}

func (t *Tracker) load(db *bolt.DB) error {
	sizeHint := func(n int) {
		t.entries.uuids.reserve(n)
	}
	err := loadFile(db, t.opts.Path, sizeHint, func(uid, partition, tenant []byte, kind Kind) error {
		// Reject what Observe would have rejected, so that a file edited
		// by hand or damaged where bbolt cannot see is still reported.
		// Names are few: each is checked once, when it is interned. Map
		// lookups with string(b) do not allocate.
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
	})
	if err != nil {
		return err
	}
	// Answers and conflicts once, after every count is in.
	for tenant := range t.tenants {
		t.updateTenantLocked(tenant)
	}
	return nil
}

func (t *Tracker) internTP(name string) uint16 {
	if id, ok := t.tpIDs[name]; ok {
		return id
	}
	id := uint16(len(t.tpNames))
	t.tpNames = append(t.tpNames, name)
	ro := slices.Clone(t.tpNames)
	t.tpNamesRO.Store(&ro) // for OriginOf, which reads without t.mu
	t.tpIDs[name] = id
	rank := slices.Index(t.opts.Partitions, name)
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

// compareTP orders TPs for conflict answers: flag order, then name.
func (t *Tracker) compareTP(a, b uint16) int {
	if c := cmp.Compare(t.tpRank[a], t.tpRank[b]); c != 0 {
		return c
	}
	return strings.Compare(t.tpNames[a], t.tpNames[b])
}

// OriginOf returns the TP that uid came from. found is false for a UID the
// tracker does not know: there is no default TP.
//
// It takes no lock for UUID-shaped UIDs (see uuidTable), so concurrent
// readers do not slow one another down.
func (t *Tracker) OriginOf(uid types.UID) (partition string, found bool) {
	if k, ok := parseUUIDString(string(uid)); ok {
		e, ok := t.entries.uuids.get(k)
		if !ok {
			return "", false
		}
		// Interned before any entry used the id (see internTP).
		return (*t.tpNamesRO.Load())[e.tp], true
	}
	t.mu.RLock()
	e, ok := t.entries.other[string(uid)]
	if ok {
		partition = t.tpNames[e.tp]
	}
	t.mu.RUnlock()
	return partition, ok
}

// Origin returns everything known about uid.
func (t *Tracker) Origin(uid types.UID) (Origin, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.entries.get(string(uid))
	if !ok {
		return Origin{}, false
	}
	return Origin{Partition: t.tpNames[e.tp], Kind: e.kind, Tenant: t.tenNames[e.tenant]}, true
}

// PartitionOfTenant returns the TP of a regular tenant: its static entry
// (Options.StaticTenants) if it has one, else the TP its objects were
// observed in. A tenant observed in several TPs is a conflict (counted,
// logged, and visible in metrics); the answer is then the first of those TPs
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
	slices.SortFunc(ids, t.compareTP)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.tpNames[id]
	}
	return out
}

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
	var changes []Change
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return 0, ErrClosed
	}
	uid := string(o.UID)
	if e, ok := t.entries.get(uid); ok {
		if t.tpNames[e.tp] == o.Partition {
			t.mu.Unlock()
			return Known, nil
		}
		t.noteConflictLocked(uid, e, o, tenant)
		t.mu.Unlock()
		return Conflict, nil
	}
	e := entry{tp: t.internTP(o.Partition), kind: o.Kind, tenant: t.tenantID(tenant)}
	changes = t.addLocked(uid, e, changes)
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
	changes = append(changes, Change{Op: OriginAdded, UID: types.UID(uid), Kind: e.kind, Partition: t.tpNames[e.tp], Tenant: t.tenNames[e.tenant]})
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
	changes = append(changes, Change{Op: OriginRemoved, UID: types.UID(uid), Kind: e.kind, Partition: t.tpNames[e.tp], Tenant: t.tenNames[e.tenant]})
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
	t.m.uidConflicts(o.Partition).Inc()
	klog.InfoS("Same UID reported by a second tenant partition; keeping the first origin",
		"uid", uid, "kind", o.Kind, "origin", t.tpNames[kept.tp], "alsoReportedBy", o.Partition)
}

// Forget removes uid's origin if it is partition: call it when that TP
// deletes the object. A delete from a TP that is not the origin only clears
// that TP's conflict. When the origin forgets a UID that another TP also
// reports, that TP becomes the origin. Forget reports whether the origin was
// removed.
func (t *Tracker) Forget(uid types.UID, partition string) (bool, error) {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return false, ErrClosed
	}
	changes, removed := t.forgetLocked(string(uid), partition, nil)
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
	others := t.conflicts[uid]
	if e.tp != tp {
		if i := slices.IndexFunc(others, func(c entry) bool { return c.tp == tp }); i >= 0 {
			others = slices.Delete(others, i, i+1)
			if len(others) == 0 {
				delete(t.conflicts, uid)
			} else {
				t.conflicts[uid] = others
			}
		}
		return changes, false
	}
	changes = t.removeLocked(uid, e, changes)
	if len(others) > 0 {
		best := 0
		for i := range others {
			if t.compareTP(others[i].tp, others[best].tp) < 0 {
				best = i
			}
		}
		next := others[best]
		others = slices.Delete(others, best, best+1)
		if len(others) == 0 {
			delete(t.conflicts, uid)
		} else {
			t.conflicts[uid] = others
		}
		klog.InfoS("Origin TP deleted a UID that another TP also reports; that TP is now its origin",
			"uid", uid, "deletedBy", partition, "origin", t.tpNames[next.tp])
		changes = t.addLocked(uid, next, changes)
	}
	return changes, true
}

// Prune removes the origins of kind from partition for which live returns
// false. Call it after a full sync of that TP, with live answering from the
// synced informer, so that objects deleted while the node was not watching
// are forgotten too. live is called without the tracker's locks held, but
// must not call the tracker's mutating methods. Prune returns the number of
// origins removed.
func (t *Tracker) Prune(partition string, kind Kind, live func(types.UID) bool) (int, error) {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	t.mu.RLock()
	if t.closed {
		t.mu.RUnlock()
		return 0, ErrClosed
	}
	tp, ok := t.tpIDs[partition]
	var candidates, conflicted []string
	if ok {
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
	}
	t.mu.RUnlock()
	// writeMu is held: nothing else mutates, so the candidates stay valid
	// while live is asked without the read lock.
	var gone []string
	for _, uid := range candidates {
		if !live(types.UID(uid)) {
			gone = append(gone, uid)
		}
	}
	for _, uid := range conflicted {
		if !live(types.UID(uid)) {
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
	t.m.pruned(partition).Add(float64(removed))
	klog.InfoS("Pruned origins that a tenant partition no longer reports", "partition", partition, "kind", kind, "removed", removed)
	t.notify(changes)
	return removed, nil
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
	slices.SortFunc(seen, t.compareTP)
	conflict := len(seen) > 1
	switch {
	case hasStatic:
		st.answer = static
		conflict = len(seen) > 1 || len(seen) == 1 && t.tpNames[seen[0]] != static
	case len(seen) > 0:
		st.answer = t.tpNames[seen[0]]
	default:
		delete(t.tenants, tenant)
		if st.conflict {
			t.m.tenantsInConflict.Add(-1)
		}
		return
	}
	if conflict != st.conflict {
		st.conflict = conflict
		if conflict {
			t.m.tenantsInConflict.Add(1)
			t.m.tenantConflicts.Inc()
			names := make([]string, len(seen))
			for i, tp := range seen {
				names[i] = t.tpNames[tp]
			}
			klog.InfoS("Regular tenant seen in more than one tenant partition; answering deterministically",
				"tenant", tenant, "partitions", names, "static", static, "answer", st.answer)
		} else {
			t.m.tenantsInConflict.Add(-1)
		}
	}
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
	slices.Sort(ids)
	for _, c := range changes {
		for _, id := range ids {
			t.subs[id](c)
		}
	}
}

package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Errors returned by the store. Callers map them to API statuses.
var (
	ErrNotFound = errors.New("object not found")
	ErrExists   = errors.New("object already exists")
	ErrConflict = errors.New("object has been modified")
	// ErrGone means the requested resourceVersion is older than the history
	// the store still holds (or newer than any it has issued).
	ErrGone = errors.New("resource version too old")
	// ErrTooNew means the requested resourceVersion is newer than any the
	// store has issued.
	ErrTooNew = errors.New("resource version too new")
	// ErrClosed ends a watch that CloseWatches or Close cut.
	ErrClosed = errors.New("watch closed by the server")
)

// DefaultHistory is the number of events of each resource kept for watches
// when Options.History is zero: Arktos's watch cache holds 100 per resource.
const DefaultHistory = 100

// DefaultRevisions is the number of changes kept for reads at an older
// resourceVersion when Options.Revisions is zero.
const DefaultRevisions = 10000

// Key names one object. Namespace is empty for objects that are not
// namespaced; Tenant is empty for cluster-scoped objects (tenants).
type Key struct {
	Resource  string
	Tenant    string
	Namespace string
	Name      string
}

func (k Key) less(o Key) bool {
	if k.Tenant != o.Tenant {
		return k.Tenant < o.Tenant
	}
	if k.Namespace != o.Namespace {
		return k.Namespace < o.Namespace
	}
	return k.Name < o.Name
}

// String renders the key for logs and errors.
func (k Key) String() string {
	return k.Resource + ":" + k.Tenant + "/" + k.Namespace + "/" + k.Name
}

func (k Key) dbKey() []byte {
	return []byte(k.Resource + "\x00" + k.Tenant + "\x00" + k.Namespace + "\x00" + k.Name)
}

func parseDBKey(b []byte) (Key, bool) {
	p := strings.Split(string(b), "\x00")
	if len(p) != 4 {
		return Key{}, false
	}
	return Key{Resource: p[0], Tenant: p[1], Namespace: p[2], Name: p[3]}, true
}

// Meta is what the store indexes about an object besides its key: its labels
// and its selectable fields (for field selectors). Absent fields read as "".
// Objects may share one Labels map (the store never changes it).
type Meta struct {
	Labels map[string]string
	Fields Fields
}

// Fields are an object's selectable fields, kept in one string ("name\x00
// value\x00" pairs, by name) rather than a map: a map of a pod's five
// fields takes about three times the memory, and a store holds millions of
// objects. Build them with MakeFields.
type Fields string

// MakeFields packs name/value pairs; empty values are left out (they read
// as "" anyway).
func MakeFields(m map[string]string) Fields {
	var names []string
	n := 0
	for k, v := range m {
		if v != "" {
			names = append(names, k)
			n += len(k) + len(v) + 2
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	b := make([]byte, 0, n)
	for _, k := range names {
		b = append(append(append(append(b, k...), 0), m[k]...), 0)
	}
	return Fields(b)
}

// Get is the value of the field name, "" when absent.
func (f Fields) Get(name string) string {
	s := string(f)
	for s != "" {
		i := strings.IndexByte(s, 0)
		j := i + 1 + strings.IndexByte(s[i+1:], 0)
		if s[:i] == name {
			return s[i+1 : j]
		}
		s = s[j+1:]
	}
	return ""
}

// Map returns the fields as a map, nil when there are none.
func (f Fields) Map() map[string]string {
	var m map[string]string
	s := string(f)
	for s != "" {
		i := strings.IndexByte(s, 0)
		j := i + 1 + strings.IndexByte(s[i+1:], 0)
		if m == nil {
			m = map[string]string{}
		}
		m[s[:i]] = s[i+1 : j]
		s = s[j+1:]
	}
	return m
}

// Object is one stored version of an object. It is immutable.
type Object struct {
	Key
	Meta
	// RV is the resourceVersion the object was written at.
	RV uint64
	// Data is the object's JSON, carrying RV as metadata.resourceVersion.
	Data []byte
}

// EventType is a watch event type, spelled as in the Kubernetes API.
type EventType string

// Event types.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
)

// Event is one change. Object is the new state; for Deleted it is the last
// state, re-encoded with the deletion's resourceVersion. Prev is the state
// before the change (nil for Added).
type Event struct {
	Type   EventType
	Object *Object
	Prev   *Object
}

// Encode builds an object's final JSON for resourceVersion rv.
type Encode func(rv uint64) ([]byte, error)

// Options configure a Store.
type Options struct {
	// Path is the bbolt file; empty keeps everything in memory only.
	Path string
	// History is how many events of each resource are kept for watches
	// (the watch cache's window); DefaultHistory when zero.
	History int
	// Revisions is how many changes, of every resource, are kept for reads
	// at an older resourceVersion (ListAt, as etcd keeps revisions until it
	// is compacted); DefaultRevisions when zero.
	Revisions int
	// Index recomputes an object's Meta when it is loaded from Path.
	// Required with Path.
	Index func(Key, []byte) (Meta, error)
}

// Store holds the objects of one TP. All methods are safe for concurrent use.
type Store struct {
	mu     sync.RWMutex
	rv     uint64
	objs   map[string]map[Key]*Object
	sorted map[string][]*Object // per-resource cache, dropped when keys change
	shared map[string]bool      // the cached slice was handed to a reader
	// log is the revision log: the event with version r is at r % len(log),
	// for every r above compacted.
	log       []Event
	compacted uint64
	// windows are the watch windows, one per resource; history is their
	// size, floor the version a new window starts at (open or compaction).
	windows map[string]*window
	history int
	floor   uint64
	notify  chan struct{} // closed and replaced at each change
	gen     uint64        // bumped by CloseWatches
	closeRV uint64        // the version at the last CloseWatches
	closed  bool
	db      *bolt.DB
}

// window is the watch window of one resource, as a watch cache holds it:
// its last events, in a ring.
type window struct {
	events   []Event
	start, n int
	// dropped: events of the resource up to this version may be gone; a
	// watch must start at or after it.
	dropped uint64
}

func (w *window) add(e Event) {
	if w.n < len(w.events) {
		w.events[(w.start+w.n)%len(w.events)] = e
		w.n++
		return
	}
	w.dropped = w.events[w.start].Object.RV
	w.events[w.start] = e
	w.start = (w.start + 1) % len(w.events)
}

func (w *window) reset(rv uint64) {
	clear(w.events)
	w.start, w.n, w.dropped = 0, 0, rv
}

var (
	bucketObjects = []byte("objects")
	bucketMeta    = []byte("meta")
	keyRV         = []byte("rv")
)

// Open returns a store, loading objects and the version counter from
// opts.Path when it is set.
func Open(opts Options) (*Store, error) {
	h := opts.History
	if h <= 0 {
		h = DefaultHistory
	}
	revs := opts.Revisions
	if revs <= 0 {
		revs = DefaultRevisions
	}
	s := &Store{
		objs:    map[string]map[Key]*Object{},
		sorted:  map[string][]*Object{},
		shared:  map[string]bool{},
		log:     make([]Event, revs),
		windows: map[string]*window{},
		history: h,
		notify:  make(chan struct{}),
	}
	if opts.Path == "" {
		return s, nil
	}
	if opts.Index == nil {
		return nil, errors.New("store: Options.Index is required with Options.Path")
	}
	db, err := bolt.Open(opts.Path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoFreelistSync: true})
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", opts.Path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		objs, err := tx.CreateBucketIfNotExists(bucketObjects)
		if err != nil {
			return err
		}
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keyRV); len(v) == 8 {
			s.rv = binary.BigEndian.Uint64(v)
		}
		return objs.ForEach(func(k, v []byte) error {
			key, ok := parseDBKey(k)
			if !ok || len(v) < 8 {
				return fmt.Errorf("corrupt record %q", k)
			}
			data := append([]byte(nil), v[8:]...)
			m, err := opts.Index(key, data)
			if err != nil {
				return fmt.Errorf("record %s: %w", key, err)
			}
			s.put(&Object{Key: key, Meta: m, RV: binary.BigEndian.Uint64(v[:8]), Data: data})
			return nil
		})
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: loading %s: %w", opts.Path, err)
	}
	s.db = db
	s.compacted, s.floor = s.rv, s.rv
	return s, nil
}

// Close ends every watch and closes the data file. The store must not be
// used afterwards.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.wake()
	if s.db != nil {
		return s.db.Close()
	}
	return nil
}

// RV returns the newest resourceVersion.
func (s *Store) RV() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}

// Compacted returns the oldest resourceVersion that ListAt can still read:
// the version of the last compaction, or of the oldest change the revision
// log still holds.
func (s *Store) Compacted() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.compacted
}

// WindowStart returns the oldest resourceVersion a watch of resource may
// start from: the version of the last event of resource that dropped out
// of its window, or of the store's opening or last compaction.
func (s *Store) WindowStart(resource string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.windowLocked(resource).dropped
}

func (s *Store) windowLocked(resource string) *window {
	w := s.windows[resource]
	if w == nil {
		w = &window{events: make([]Event, s.history), dropped: s.floor}
		s.windows[resource] = w
	}
	return w
}

// Get returns the object at k.
func (s *Store) Get(k Key) (*Object, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.objs[k.Resource][k]
	return o, ok
}

// ListOptions select objects of one resource.
type ListOptions struct {
	// Tenant and Namespace restrict the list; empty means all.
	Tenant, Namespace string
	// After starts the list after this key (tenant, namespace, name), for
	// paging; the zero value starts at the beginning.
	After *Key
	// Limit caps the number of objects; zero means no cap.
	Limit int
	// Match filters objects; nil matches all.
	Match func(*Object) bool
}

// List returns the matching objects of resource in key order, the store's
// version at the time, and whether more matching objects follow the last.
func (s *Store) List(resource string, o ListOptions) (objs []*Object, rv uint64, more bool) {
	s.mu.Lock() // the sorted cache may be rebuilt
	all := s.sortedLocked(resource)
	s.shared[resource] = true
	rv = s.rv
	s.mu.Unlock()
	// all is never modified once handed out (writers copy a shared slice
	// first), so it is read without the lock; its objects are immutable.
	objs, more = filter(all, o)
	return objs, rv, more
}

// ListAt is List as the store was at version rv, rebuilt from the revision
// log: ErrGone when rv is older than Compacted, ErrTooNew when newer than RV.
func (s *Store) ListAt(resource string, rv uint64, o ListOptions) (objs []*Object, more bool, err error) {
	s.mu.Lock()
	switch {
	case rv > s.rv:
		s.mu.Unlock()
		return nil, false, ErrTooNew
	case rv < s.compacted:
		s.mu.Unlock()
		return nil, false, ErrGone
	}
	all := s.sortedLocked(resource)
	s.shared[resource] = true
	// The state at rv of every key changed since: what the first later
	// change replaced (nil when it created the object).
	var then map[Key]*Object
	n := uint64(len(s.log))
	for r := rv + 1; r <= s.rv; r++ {
		e := s.log[r%n]
		if e.Object.Resource != resource {
			continue
		}
		if then == nil {
			then = map[Key]*Object{}
		}
		if _, seen := then[e.Object.Key]; !seen {
			then[e.Object.Key] = e.Prev
		}
	}
	s.mu.Unlock()
	if then != nil {
		past := make([]*Object, 0, len(all)+len(then))
		for _, obj := range all {
			if _, changed := then[obj.Key]; !changed {
				past = append(past, obj)
			}
		}
		for _, obj := range then {
			if obj != nil {
				past = append(past, obj)
			}
		}
		sort.Slice(past, func(i, j int) bool { return past[i].Key.less(past[j].Key) })
		all = past
	}
	objs, more = filter(all, o)
	return objs, more, nil
}

// filter applies o to all, a resource's objects in key order.
func filter(all []*Object, o ListOptions) (objs []*Object, more bool) {
	start := Key{Tenant: o.Tenant, Namespace: o.Namespace}
	if o.Tenant == "" {
		start.Namespace = ""
	}
	i := sort.Search(len(all), func(i int) bool { return !all[i].Key.less(start) })
	if o.After != nil {
		j := sort.Search(len(all), func(i int) bool { return o.After.less(all[i].Key) })
		if j > i {
			i = j
		}
	}
	for ; i < len(all); i++ {
		obj := all[i]
		if o.Tenant != "" && obj.Tenant != o.Tenant {
			break
		}
		if o.Tenant != "" && o.Namespace != "" && obj.Namespace != o.Namespace {
			break
		}
		if o.Tenant == "" && o.Namespace != "" && obj.Namespace != o.Namespace {
			continue
		}
		if o.Match != nil && !o.Match(obj) {
			continue
		}
		if o.Limit > 0 && len(objs) == o.Limit {
			return objs, true
		}
		objs = append(objs, obj)
	}
	return objs, false
}

// Count returns the number of objects of resource.
func (s *Store) Count(resource string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.objs[resource])
}

func (s *Store) sortedLocked(resource string) []*Object {
	if l, ok := s.sorted[resource]; ok {
		return l
	}
	m := s.objs[resource]
	l := make([]*Object, 0, len(m))
	for _, o := range m {
		l = append(l, o)
	}
	sort.Slice(l, func(i, j int) bool { return l[i].Key.less(l[j].Key) })
	s.sorted[resource] = l
	s.shared[resource] = false
	return l
}

// put installs o in memory (no event, no persistence).
func (s *Store) put(o *Object) {
	m := s.objs[o.Resource]
	if m == nil {
		m = map[Key]*Object{}
		s.objs[o.Resource] = m
	}
	old, existed := m[o.Key]
	m[o.Key] = o
	if !existed {
		delete(s.sorted, o.Resource)
	} else if l, ok := s.sorted[o.Resource]; ok {
		// Same keys: copy the cached slice with the new version in place,
		// so lists already handed out stay unchanged.
		i := sort.Search(len(l), func(i int) bool { return !l[i].Key.less(o.Key) })
		if i < len(l) && l[i] == old {
			// Copy on write, only if a reader holds the slice.
			if s.shared[o.Resource] {
				c := make([]*Object, len(l))
				copy(c, l)
				l = c
				s.sorted[o.Resource] = l
				s.shared[o.Resource] = false
			}
			l[i] = o
		} else {
			delete(s.sorted, o.Resource)
		}
	}
}

func (s *Store) remove(k Key) {
	delete(s.objs[k.Resource], k)
	delete(s.sorted, k.Resource)
}

// Create stores a new object at k. It fails with ErrExists if k is taken.
func (s *Store) Create(k Key, m Meta, enc Encode) (*Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if _, ok := s.objs[k.Resource][k]; ok {
		return nil, ErrExists
	}
	return s.commit(Added, k, m, enc, nil)
}

// Update replaces the object at k. When expectRV is not zero, the stored
// object must still be at that version, else ErrConflict.
func (s *Store) Update(k Key, expectRV uint64, m Meta, enc Encode) (*Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	old, ok := s.objs[k.Resource][k]
	if !ok {
		return nil, ErrNotFound
	}
	if expectRV != 0 && old.RV != expectRV {
		return nil, ErrConflict
	}
	return s.commit(Modified, k, m, enc, old)
}

// Delete removes the object at k, with the same expectRV rule as Update.
// enc re-encodes the deleted object for the deletion's version; the result
// is what watchers see in the Deleted event.
func (s *Store) Delete(k Key, expectRV uint64, enc Encode) (*Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	old, ok := s.objs[k.Resource][k]
	if !ok {
		return nil, ErrNotFound
	}
	if expectRV != 0 && old.RV != expectRV {
		return nil, ErrConflict
	}
	return s.commit(Deleted, k, old.Meta, enc, old)
}

// Put is one object for Load.
type Put struct {
	Key    Key
	Meta   Meta
	Encode Encode
}

// Load creates or replaces many objects in one durable commit (one event
// each). It is for seeding and generating, where one sync per object would
// be slow. It calls each put's Encode once, in the order of puts.
func (s *Store) Load(puts []Put) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	rv := s.rv
	objs := make([]Object, len(puts)) // one allocation for the batch
	for i, p := range puts {
		rv++
		data, err := p.Encode(rv)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", p.Key, err)
		}
		objs[i] = Object{Key: p.Key, Meta: p.Meta, RV: rv, Data: data}
	}
	if s.db != nil {
		err := s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketObjects)
			for i := range objs {
				if err := b.Put(objs[i].dbKey(), record(&objs[i])); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketMeta).Put(keyRV, u64(rv))
		})
		if err != nil {
			return fmt.Errorf("store: persisting: %w", err)
		}
	}
	for i := range objs {
		// The object replaced, if any, is read now: a key given twice
		// replaces its own first version.
		o := &objs[i]
		old := s.objs[o.Resource][o.Key]
		ev := Added
		if old != nil {
			ev = Modified
		}
		s.rv = o.RV
		s.put(o)
		s.appendEvent(Event{Type: ev, Object: o, Prev: old})
	}
	s.wake()
	return nil
}

// commit runs under s.mu: it assigns the next version, persists, then
// changes memory and wakes watchers. It is one bolt Update, not DB.Batch:
// as in etcd, a change becomes visible (to reads and watches) only once it
// is durable, and versions are durable in order, so commits are serial and
// there is nothing for Batch to coalesce. (tporigin, the other bbolt user,
// groups its writes into one transaction itself: writeBatch.)
func (s *Store) commit(t EventType, k Key, m Meta, enc Encode, old *Object) (*Object, error) {
	rv := s.rv + 1
	data, err := enc(rv)
	if err != nil {
		return nil, err
	}
	o := &Object{Key: k, Meta: m, RV: rv, Data: data}
	if s.db != nil {
		err := s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketObjects)
			var err error
			if t == Deleted {
				err = b.Delete(k.dbKey())
			} else {
				err = b.Put(k.dbKey(), record(o))
			}
			if err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(keyRV, u64(rv))
		})
		if err != nil {
			return nil, fmt.Errorf("store: persisting %s: %w", k, err)
		}
	}
	s.rv = rv
	if t == Deleted {
		s.remove(k)
	} else {
		s.put(o)
	}
	s.appendEvent(Event{Type: t, Object: o, Prev: old})
	s.wake()
	return o, nil
}

func (s *Store) appendEvent(e Event) {
	n := uint64(len(s.log))
	s.log[e.Object.RV%n] = e
	if e.Object.RV > n && e.Object.RV-n > s.compacted {
		s.compacted = e.Object.RV - n
	}
	s.windowLocked(e.Object.Resource).add(e)
}

func (s *Store) wake() {
	close(s.notify)
	s.notify = make(chan struct{})
}

func record(o *Object) []byte {
	b := make([]byte, 8+len(o.Data))
	binary.BigEndian.PutUint64(b, o.RV)
	copy(b[8:], o.Data)
	return b
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// Compact drops the whole event history, the revision log and every watch
// window: reads and watches from any version older than now get ErrGone, as
// after an etcd compaction and an API server restart.
func (s *Store) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted, s.floor = s.rv, s.rv
	clear(s.log)
	for _, w := range s.windows {
		w.reset(s.rv)
	}
	s.wake()
}

// CloseWatches ends every open watch with ErrClosed, as when an API server
// drops its watch connections, once the watch has returned the events
// committed before the call: so a test can end a watch to read all it got.
func (s *Store) CloseWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.closeRV = s.rv
	s.wake()
}

// Watcher follows the events of one resource. It is used by one goroutine.
type Watcher struct {
	s        *Store
	resource string
	window   *window
	cursor   uint64
	gen      uint64
	buf      []Event
	// backlog holds the window's events after the watch's start version,
	// taken when the watch opens, as a watch cache hands a new watcher its
	// initial events: later events pushing them out of the window do not
	// take them from this watch.
	backlog []Event
}

// Watch returns a Watcher for the events of resource after version from.
// It fails with ErrGone when from is older than WindowStart(resource), and
// with ErrTooNew when it is newer than RV.
func (s *Store) Watch(resource string, from uint64) (*Watcher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if from > s.rv {
		return nil, ErrTooNew
	}
	w := s.windowLocked(resource)
	if from < w.dropped {
		return nil, ErrGone
	}
	var backlog []Event
	for i := 0; i < w.n; i++ {
		if e := w.events[(w.start+i)%len(w.events)]; e.Object.RV > from {
			backlog = append(backlog, e)
		}
	}
	return &Watcher{s: s, resource: resource, window: w, cursor: s.rv, gen: s.gen, backlog: backlog}, nil
}

// Cursor returns the version up to which the watcher has seen every event.
func (w *Watcher) Cursor() uint64 { return w.cursor }

// Next blocks until there are events after the cursor and returns them
// (the slice is reused by the next call). It returns (nil, nil) when tick
// fires first, ErrGone when the events were dropped from the history,
// ErrClosed when the server closed the watch (after the events committed
// before CloseWatches), or ctx's error.
func (w *Watcher) Next(ctx context.Context, tick <-chan time.Time) ([]Event, error) {
	if b := w.backlog; b != nil {
		w.backlog = nil
		if len(b) > 0 {
			return b, nil
		}
	}
	s := w.s
	for {
		s.mu.RLock()
		upTo, closing := s.rv, w.gen != s.gen
		if closing {
			upTo = s.closeRV
		}
		if s.closed || closing && w.cursor >= upTo {
			s.mu.RUnlock()
			return nil, ErrClosed
		}
		win := w.window
		if w.cursor < win.dropped {
			s.mu.RUnlock()
			return nil, ErrGone
		}
		w.buf = w.buf[:0]
		for i := 0; i < win.n; i++ {
			if e := win.events[(win.start+i)%len(win.events)]; e.Object.RV > w.cursor && e.Object.RV <= upTo {
				w.buf = append(w.buf, e)
			}
		}
		w.cursor = upTo
		ch := s.notify
		s.mu.RUnlock()
		if len(w.buf) > 0 {
			return w.buf, nil
		}
		if closing {
			return nil, ErrClosed
		}
		select {
		case <-ch:
		case <-tick:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

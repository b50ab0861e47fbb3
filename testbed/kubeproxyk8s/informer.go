package kubeproxyk8s

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// informerOptions configure a keyedInformer.
type informerOptions struct {
	// Name identifies the informer in client-go's logs, e.g. "tp1 services".
	Name string
	// Transform, when set, rewrites each object before it is stored and
	// handed to the handler: to drop fields nobody reads, or to keep a
	// record made of the object in its place. It returns an object of the
	// same kind, or a keyedRecord under the object's key.
	Transform cache.TransformFunc
	// PageSize and PageGate are the Feed's (informer.FeedOptions): with a
	// PageSize, a list is read page by page, each page's objects
	// transformed and stored before the next is fetched, so that a list
	// never holds more than one page of API objects; its events come when
	// it is complete.
	PageSize int64
	PageGate chan struct{}
}

// keyedInformer is the Source's informer: it lists and watches one resource
// through a pkg/informer Feed and keeps the objects, or records made of
// them, by tenant/namespace/name, handing a handler exact add, update and
// delete events. client-go's informers key by namespace/name, where two
// tenants' equal names would hide each other.
type keyedInformer struct {
	feed      *informer.Feed
	h         cache.ResourceEventHandler
	transform cache.TransformFunc

	mu    sync.RWMutex
	items map[objectKey]any
	// staged collects a paged list until the Replace that ends it; only
	// the reflector's goroutine uses it.
	staged map[objectKey]any
}

// newInformer builds a keyedInformer over lw (a pkg/informer ListWatch,
// normally) for objects like expected; nil expected accepts any object.
func newInformer(lw cache.ListerWatcherWithContext, expected any, h cache.ResourceEventHandler, o informerOptions) *keyedInformer {
	i := &keyedInformer{h: h, transform: o.Transform, items: map[objectKey]any{}}
	i.feed = informer.NewFeed(lw, expected, (*store)(i), informer.FeedOptions{Name: o.Name, PageSize: o.PageSize, PageGate: o.PageGate})
	return i
}

// Run lists, then watches, until ctx ends; it relists when the watch
// cannot continue.
func (i *keyedInformer) Run(ctx context.Context) { i.feed.Run(ctx) }

// HasSynced reports whether the first full list has been delivered.
func (i *keyedInformer) HasSynced() bool { return i.feed.HasSynced() }

// List returns the objects held now, in no particular order.
func (i *keyedInformer) List() []any {
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make([]any, 0, len(i.items))
	for _, o := range i.items {
		out = append(out, o)
	}
	return out
}

// Len is the number of objects held.
func (i *keyedInformer) Len() int {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return len(i.items)
}

// objectKey is an object's tenant, namespace and name (cluster-scoped
// objects have an empty namespace); a comparable struct, so a lookup builds
// no string.
type objectKey struct{ tenant, namespace, name string }

func (k objectKey) String() string { return k.tenant + "/" + k.namespace + "/" + k.name }

// keyedRecord is a value a Transform keeps in place of an API object, which
// names the object's key itself: its tenant (tenancy.TenantOf's answer),
// namespace and name.
type keyedRecord interface {
	InformerKey() (tenant, namespace, name string)
}

func keyOf(obj any) (objectKey, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if k, ok := obj.(keyedRecord); ok {
		t, ns, n := k.InformerKey()
		return objectKey{t, ns, n}, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return objectKey{}, fmt.Errorf("informer: %T is not an API object: %w", obj, err)
	}
	return objectKey{tenancy.TenantOf(m), m.GetNamespace(), m.GetName()}, nil
}

// store is the reflector's side of a keyedInformer (cache.ReflectorStore). The
// reflector calls it from one goroutine, so events stay in order.
type store keyedInformer

func (s *store) prepare(obj any) (objectKey, any, error) {
	if s.transform != nil {
		var err error
		if obj, err = s.transform(obj); err != nil {
			return objectKey{}, nil, err
		}
	}
	k, err := keyOf(obj)
	return k, obj, err
}

func (s *store) Add(obj any) error    { return s.upsert(obj) }
func (s *store) Update(obj any) error { return s.upsert(obj) }
func (s *store) Resync() error        { return nil }

func (s *store) upsert(obj any) error {
	k, obj, err := s.prepare(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old, had := s.items[k]
	s.items[k] = obj
	s.mu.Unlock()
	if had {
		s.h.OnUpdate(old, obj)
	} else {
		s.h.OnAdd(obj, false)
	}
	return nil
}

func (s *store) Delete(obj any) error {
	k, err := keyOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old, had := s.items[k]
	delete(s.items, k)
	s.mu.Unlock()
	if had {
		s.h.OnDelete(old)
	}
	return nil
}

// StartList begins a paged list (informer.PagedSink).
func (s *store) StartList() { s.staged = map[objectKey]any{} }

// ListPage stages one page of a paged list, transformed (informer.PagedSink).
func (s *store) ListPage(items []any) error {
	for _, obj := range items {
		k, obj, err := s.prepare(obj)
		if err != nil {
			return err
		}
		s.staged[k] = obj
	}
	return nil
}

// Replace is a full list (after a paged list, its staged pages): objects
// new to the store are added, known ones updated, and those the list lacks
// deleted (they went away while the watch was down).
func (s *store) Replace(list []any, _ string) error {
	if s.staged == nil { // a whole list
		s.staged = make(map[objectKey]any, len(list))
	}
	err := s.ListPage(list)
	next := s.staged
	s.staged = nil
	if err != nil {
		return err
	}
	s.mu.Lock()
	prev := s.items
	s.items = next
	s.mu.Unlock()
	initial := !s.feed.HasSynced()
	for k, obj := range next {
		if old, had := prev[k]; had {
			s.h.OnUpdate(old, obj)
		} else {
			s.h.OnAdd(obj, initial)
		}
	}
	for k, old := range prev {
		if _, ok := next[k]; !ok {
			s.h.OnDelete(cache.DeletedFinalStateUnknown{Key: k.String(), Obj: old})
		}
	}
	return nil
}

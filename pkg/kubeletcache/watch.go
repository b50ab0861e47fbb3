package kubeletcache

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// watcher is the Watch strategy, kubelet's default: one reflector per
// referenced object on the pod's TP (metadata.name field selector), running
// while a registered pod references the object, stopped once an immutable
// object is listed or when idle for MaxIdle, restarted by the next read.
type watcher[T runtime.Object] struct{ m *manager[T] }

// watchState is an item's reflector. Guarded by item.mu.
type watchState struct {
	running   bool
	gen       uint64        // counts reflector starts; a stopped one's calls are ignored
	synced    bool          // the running reflector has listed
	attempted bool          // the running reflector's first list has succeeded or failed
	attemptCh chan struct{} // closed when attempted becomes true
	cancel    context.CancelFunc
	immutable bool
	up        bool // the reflector's last list or watch succeeded
}

// referenced starts a new item's reflector.
func (w watcher[T]) referenced(it *item[T], isNew bool) {
	if !isNew {
		return
	}
	it.mu.Lock()
	w.startLocked(it)
	it.mu.Unlock()
}

func (w watcher[T]) freshness(it *item[T], now time.Time) Freshness {
	f := Freshness{Partition: it.key.Partition, AsOf: it.asOf, LastError: it.lastErr, NotFound: it.notFound}
	switch {
	case it.watch.immutable:
		f.AsOf = now // an immutable object cannot change
	case it.watch.running && it.watch.up:
		f.AsOf = now
	default:
		f.Stale = it.watch.running && !it.watch.up
	}
	if !f.AsOf.IsZero() {
		f.Age = now.Sub(f.AsOf)
	}
	return f
}

// startLocked starts it's reflector on its TP. Called with it.mu held.
func (w watcher[T]) startLocked(it *item[T]) {
	m := w.m
	if it.watch.running || it.watch.immutable || it.removed || m.base.Err() != nil {
		return
	}
	p, ok := m.parts.Get(it.key.Partition)
	if !ok {
		it.lastErr = fmt.Errorf("kubeletcache: partition %q is not configured", it.key.Partition)
		return
	}
	tenant := tenancy.NormalTenant(it.key.Tenant)
	objLW, err := informer.NewListWatch(p.Client, m.k.api, informer.Scope{
		Tenant: tenant, Namespace: it.key.Namespace,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", it.key.Name).String(),
	})
	if err != nil {
		it.lastErr = err
		return
	}
	it.watch.gen++
	gen := it.watch.gen
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := objLW.ListWithContext(ctx, o)
			if err != nil && ctx.Err() == nil {
				w.markDown(it, gen, err)
			}
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := objLW.WatchWithContext(ctx, o)
			switch {
			case err == nil:
				w.markUp(it, gen)
			case ctx.Err() == nil:
				w.markDown(it, gen, err)
			}
			return wi, err
		},
	}
	r := informer.NewFeed(lw, m.k.empty(), &itemStore[T]{w: w, it: it, gen: gen}, informer.FeedOptions{
		Name: "kubeletcache " + m.k.api.Name + " " + it.key.String(),
	})
	ctx, cancel := context.WithCancel(m.base)
	it.watch = watchState{running: true, gen: gen, attemptCh: make(chan struct{}), cancel: cancel}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		r.Run(ctx)
	}()
}

// stop stops it's reflector, keeping the last known object. It does not
// wait: the reflector may be inside it's store, waiting for it.mu.
func (watcher[T]) stop(it *item[T]) bool {
	if !it.watch.running {
		return false
	}
	it.watch.cancel()
	it.watch.running, it.watch.synced, it.watch.up = false, false, false
	return true
}

// markDown records a failed list or watch of reflector generation gen.
func (watcher[T]) markDown(it *item[T], gen uint64, err error) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if gen != it.watch.gen || !it.watch.running {
		return // a stopped reflector's last call
	}
	it.watch.up, it.lastErr = false, err
	it.watch.attemptedLocked()
}

func (w watcher[T]) markUp(it *item[T], gen uint64) {
	now := w.m.o.Now()
	it.mu.Lock()
	defer it.mu.Unlock()
	if gen != it.watch.gen || !it.watch.running {
		return
	}
	it.watch.up, it.lastErr, it.asOf = true, nil, now
}

func (ws *watchState) attemptedLocked() {
	if !ws.attempted {
		ws.attempted = true
		close(ws.attemptCh)
	}
}

// get serves from the reflector's store. A new (or restarted) reflector
// is waited for up to SyncTimeout; then the last known object is served if
// there is one.
func (w watcher[T]) get(it *item[T]) (T, error) {
	m := w.m
	var zero T
	it.mu.Lock()
	if !it.watch.running && !it.watch.immutable {
		w.startLocked(it) // recycled while idle
	}
	// Wait for the reflector's first list, unless it has already failed:
	// then the TP is down and the last known object is served at once.
	waiting, ch := !it.watch.immutable && !it.watch.attempted, it.watch.attemptCh
	it.mu.Unlock()
	if waiting && ch != nil {
		timer := time.NewTimer(m.o.SyncTimeout)
		select {
		case <-ch:
		case <-timer.C:
		case <-m.base.Done():
		}
		timer.Stop()
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	current := it.watch.synced && it.watch.up
	switch {
	case it.have:
		if !it.watch.immutable && !current {
			m.m.servedStale(it.key.Partition).Inc()
		}
		return it.obj, nil
	case it.notFound:
		// The last answer was "does not exist"; that is what is known.
		if !current {
			m.m.servedStale(it.key.Partition).Inc()
		}
		return zero, apierrors.NewNotFound(m.gr, it.key.Name)
	}
	err := it.lastErr
	if err == nil {
		err = fmt.Errorf("no answer within %v", m.o.SyncTimeout)
	}
	return zero, fmt.Errorf("kubeletcache: waiting for %s %s from its partition: %w", m.k.api.Name, it.key, err)
}

// itemStore is the reflector's store for one object: the field selector
// means at most one object arrives.
type itemStore[T runtime.Object] struct {
	w   watcher[T]
	it  *item[T]
	gen uint64
}

// current reports whether the store's reflector is the item's running one;
// a stopped reflector may still deliver, and is ignored. it.mu is held.
func (s *itemStore[T]) current() bool { return s.gen == s.it.watch.gen && s.it.watch.running }

func (s *itemStore[T]) set(obj any) error {
	o, ok := obj.(T)
	if !ok {
		return fmt.Errorf("kubeletcache: reflector delivered %T", obj)
	}
	now := s.w.m.o.Now()
	it := s.it
	it.mu.Lock()
	defer it.mu.Unlock()
	if !s.current() {
		return nil
	}
	it.obj, it.have, it.notFound, it.asOf = o, true, false, now
	if s.w.m.k.immutable(o) && !it.watch.immutable {
		// An immutable object cannot change: stop watching it.
		it.watch.immutable = true
		if it.watch.synced {
			s.w.stop(it)
		}
		klog.V(4).InfoS("Immutable object; its reflector stops", "resource", s.w.m.k.api.Name, "key", it.key.String())
	}
	return nil
}

func (s *itemStore[T]) Add(obj any) error    { return s.set(obj) }
func (s *itemStore[T]) Update(obj any) error { return s.set(obj) }

func (s *itemStore[T]) Delete(any) error {
	var zero T
	now := s.w.m.o.Now()
	s.it.mu.Lock()
	defer s.it.mu.Unlock()
	if !s.current() {
		return nil
	}
	s.it.obj, s.it.have, s.it.notFound, s.it.asOf, s.it.watch.immutable = zero, false, true, now, false
	return nil
}

func (s *itemStore[T]) Replace(list []any, _ string) error {
	if len(list) > 0 {
		if err := s.set(list[len(list)-1]); err != nil {
			return err
		}
	} else if err := s.Delete(nil); err != nil {
		return err
	}
	it := s.it
	it.mu.Lock()
	defer it.mu.Unlock()
	if !s.current() {
		return nil
	}
	it.watch.up, it.lastErr, it.asOf = true, nil, s.w.m.o.Now()
	if !it.watch.synced {
		it.watch.synced = true
		it.watch.attemptedLocked()
		if it.watch.immutable {
			s.w.stop(it)
		}
	}
	return nil
}

func (s *itemStore[T]) Resync() error { return nil }

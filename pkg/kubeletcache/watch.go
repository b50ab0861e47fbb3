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

// startLocked starts it's reflector on its TP. Called with it.mu held.
func (m *manager[T]) startLocked(it *item[T]) {
	if it.running || it.immutable || it.removed || m.base.Err() != nil {
		return
	}
	c, err := m.client(it.key.Partition)
	if err != nil {
		it.lastErr = err
		return
	}
	tenant := it.key.Tenant
	if tenancy.IsSystem(tenant) {
		tenant = tenancy.SystemTenant
	}
	objLW, err := informer.NewListWatch(c, m.k.api, informer.Scope{
		Tenant: tenant, Namespace: it.key.Namespace,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", it.key.Name).String(),
	})
	if err != nil {
		it.lastErr = err
		return
	}
	it.gen++
	gen := it.gen
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := objLW.ListWithContext(ctx, o)
			if err != nil && ctx.Err() == nil {
				m.markDown(it, gen, err)
			}
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := objLW.WatchWithContext(ctx, o)
			switch {
			case err == nil:
				m.markUp(it, gen)
			case ctx.Err() == nil:
				m.markDown(it, gen, err)
			}
			return w, err
		},
	}
	r := informer.NewFeed(lw, m.k.empty(), &itemStore[T]{m: m, it: it, gen: gen}, informer.FeedOptions{
		Name: "kubeletcache " + m.k.resource + " " + it.key.String(),
	})
	ctx, cancel := context.WithCancel(m.base)
	it.running, it.synced, it.attempted, it.up = true, false, false, false
	it.attemptCh = make(chan struct{})
	it.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		r.Run(ctx)
	}()
}

// stopLocked stops it's reflector, keeping the last known object. It does
// not wait: the reflector may be inside it's store, waiting for it.mu.
func (m *manager[T]) stopLocked(it *item[T]) {
	if !it.running {
		return
	}
	it.cancel()
	it.running, it.synced, it.up = false, false, false
}

// markDown records a failed list or watch of reflector generation gen.
func (m *manager[T]) markDown(it *item[T], gen uint64, err error) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if gen != it.gen || !it.running {
		return // a stopped reflector's last call
	}
	it.up, it.lastErr = false, err
	it.attemptedLocked()
}

func (m *manager[T]) markUp(it *item[T], gen uint64) {
	now := m.o.Now()
	it.mu.Lock()
	defer it.mu.Unlock()
	if gen != it.gen || !it.running {
		return
	}
	it.up, it.lastErr, it.asOf = true, nil, now
}

func (it *item[T]) attemptedLocked() {
	if !it.attempted {
		it.attempted = true
		close(it.attemptCh)
	}
}

// getWatched serves from the reflector's store. A new (or restarted)
// reflector is waited for up to SyncTimeout; then the last known object is
// served if there is one.
func (m *manager[T]) getWatched(it *item[T]) (T, error) {
	var zero T
	it.mu.Lock()
	if !it.running && !it.immutable {
		m.startLocked(it) // recycled while idle
	}
	// Wait for the reflector's first list, unless it has already failed:
	// then the TP is down and the last known object is served at once.
	waiting, ch := !it.immutable && !it.attempted, it.attemptCh
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
	switch {
	case it.have:
		if !it.immutable && !(it.synced && it.up) {
			m.m.servedStale(it.key.Partition).Inc()
		}
		return it.obj, nil
	case it.notFound:
		// The last answer was "does not exist"; that is what is known.
		if !it.synced || !it.up {
			m.m.servedStale(it.key.Partition).Inc()
		}
		return zero, apierrors.NewNotFound(m.gr, it.key.Name)
	}
	err := it.lastErr
	if err == nil {
		err = fmt.Errorf("no answer within %v", m.o.SyncTimeout)
	}
	return zero, fmt.Errorf("kubeletcache: waiting for %s %s from its partition: %w", m.k.resource, it.key, err)
}

// itemStore is the reflector's store for one object: the field selector
// means at most one object arrives.
type itemStore[T runtime.Object] struct {
	m   *manager[T]
	it  *item[T]
	gen uint64
}

// current reports whether the store's reflector is the item's running one;
// a stopped reflector may still deliver, and is ignored. it.mu is held.
func (s *itemStore[T]) current() bool { return s.gen == s.it.gen && s.it.running }

func (s *itemStore[T]) set(obj any) error {
	o, ok := obj.(T)
	if !ok {
		return fmt.Errorf("kubeletcache: reflector delivered %T", obj)
	}
	now := s.m.o.Now()
	it := s.it
	it.mu.Lock()
	defer it.mu.Unlock()
	if !s.current() {
		return nil
	}
	it.obj, it.have, it.notFound, it.asOf = o, true, false, now
	if s.m.k.immutable(o) && !it.immutable {
		// An immutable object cannot change: stop watching it.
		it.immutable = true
		if it.synced {
			s.m.stopLocked(it)
		}
		klog.V(4).InfoS("Immutable object; its reflector stops", "resource", s.m.k.resource, "key", it.key.String())
	}
	return nil
}

func (s *itemStore[T]) Add(obj any) error    { return s.set(obj) }
func (s *itemStore[T]) Update(obj any) error { return s.set(obj) }

func (s *itemStore[T]) Delete(any) error {
	var zero T
	now := s.m.o.Now()
	s.it.mu.Lock()
	defer s.it.mu.Unlock()
	if !s.current() {
		return nil
	}
	s.it.obj, s.it.have, s.it.notFound, s.it.asOf, s.it.immutable = zero, false, true, now, false
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
	it.up, it.lastErr, it.asOf = true, nil, s.m.o.Now()
	if !it.synced {
		it.synced = true
		it.attemptedLocked()
		if it.immutable {
			s.m.stopLocked(it)
		}
	}
	return nil
}

func (s *itemStore[T]) Resync() error { return nil }

package kubeletcache

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
)

// getter is the Get strategy: every read asks the pod's TP, and serves the
// last known object only when the TP cannot be reached.
type getter[T runtime.Object] struct{ m *manager[T] }

func (getter[T]) referenced(*item[T], bool) {}

func (g getter[T]) get(it *item[T]) (T, error) { return g.m.fetch(it) }

func (getter[T]) freshness(it *item[T], now time.Time) Freshness { return freshnessOfAnswer(it, now) }

func (getter[T]) stop(*item[T]) bool { return false }

// requestContext routes a request to the tenant's path on its TP.
func requestContext(ctx context.Context, tenant string) context.Context {
	if tenancy.IsSystem(tenant) {
		return ctx
	}
	return tenancyk8s.WithTenant(ctx, tenant)
}

// fetch asks the TP (the Get and Cache strategies). A failure to reach it
// serves the last known object; NotFound stays NotFound.
func (m *manager[T]) fetch(it *item[T]) (T, error) {
	var zero T
	p, ok := m.parts.Get(it.key.Partition)
	if !ok {
		return zero, fmt.Errorf("kubeletcache: partition %q is not configured", it.key.Partition)
	}
	// A TP that just failed (any request of this node to it, informers
	// included) is not asked again for SyncTimeout: reads get the last
	// known answer at once instead of each waiting on a dead TP.
	if st := p.Status(); !st.Reachable && !st.LastErrorTime.IsZero() && time.Since(st.LastErrorTime) < m.o.SyncTimeout {
		if obj, err, ok := m.lastKnown(it, func() error {
			return fmt.Errorf("partition %s unreachable: %s", it.key.Partition, st.LastError)
		}); ok {
			return obj, err
		}
	}
	ctx, cancel := context.WithTimeout(m.base, m.o.SyncTimeout)
	obj, err := m.k.get(requestContext(ctx, it.key.Tenant), p.Client.CoreV1(), it.key.Namespace, it.key.Name)
	cancel()
	now := m.o.Now()
	it.mu.Lock()
	defer it.mu.Unlock()
	switch {
	case err == nil:
		it.obj, it.have, it.notFound, it.asOf, it.lastErr = obj, true, false, now, nil
		return obj, nil
	case apierrors.IsNotFound(err):
		it.obj, it.have, it.notFound, it.asOf, it.lastErr = zero, false, true, now, nil
		return zero, err
	}
	it.lastErr = err
	if obj, err, ok := m.lastKnownLocked(it); ok {
		return obj, err
	}
	return zero, fmt.Errorf("kubeletcache: getting %s %s: %w", m.k.api.Name, it.key, err)
}

// lastKnown serves it's last known answer, if it has one, for a TP known
// to be down; cause gives the error to record when none is yet.
func (m *manager[T]) lastKnown(it *item[T], cause func() error) (T, error, bool) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if (it.have || it.notFound) && it.lastErr == nil {
		it.lastErr = cause()
	}
	return m.lastKnownLocked(it)
}

// lastKnownLocked serves it's last known answer, the object or NotFound,
// counting a stale read; ok is false when there is none. it.mu is held.
func (m *manager[T]) lastKnownLocked(it *item[T]) (obj T, err error, ok bool) {
	switch {
	case it.have:
		m.m.servedStale(it.key.Partition).Inc()
		return it.obj, nil, true
	case it.notFound:
		// The last answer was "does not exist"; that is what is known.
		m.m.servedStale(it.key.Partition).Inc()
		return obj, apierrors.NewNotFound(m.gr, it.key.Name), true
	}
	return obj, nil, false
}

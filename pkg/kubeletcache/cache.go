package kubeletcache

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// ttlCache is the Cache strategy: an answer from the TP (the object, or
// NotFound) is served for Options.TTL, then the next read asks again.
type ttlCache[T runtime.Object] struct{ m *manager[T] }

// referenced: like kubelet, a new reference makes the next read go to the
// TP, so a new pod does not start on old data.
func (ttlCache[T]) referenced(it *item[T], isNew bool) {
	if isNew {
		return
	}
	it.mu.Lock()
	it.asOf = time.Time{}
	it.mu.Unlock()
}

func (c ttlCache[T]) get(it *item[T]) (T, error) {
	now := c.m.o.Now()
	it.mu.Lock()
	if !it.asOf.IsZero() && now.Sub(it.asOf) < c.m.o.TTL {
		obj, have := it.obj, it.have
		it.mu.Unlock()
		if have {
			return obj, nil
		}
		var zero T
		return zero, apierrors.NewNotFound(c.m.gr, it.key.Name)
	}
	it.mu.Unlock()
	return c.m.fetch(it)
}

func (ttlCache[T]) freshness(it *item[T], now time.Time) Freshness { return freshnessOfAnswer(it, now) }

func (ttlCache[T]) stop(*item[T]) bool { return false }

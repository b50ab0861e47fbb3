package source

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// listWatcher is what a feed reads: client-go's ListerWatcher in its
// context form (informer.NewFeed adds the rest). informer.ListWatch and
// informer.EndpointsListWatch are ones.
type listWatcher = cache.ListerWatcherWithContext

// merge returns one list/watch that reads all of lws: lws[0] itself when it
// is alone (so that its lists stay paged), else a multiListWatch.
func merge(lws []listWatcher) listWatcher {
	if len(lws) == 1 {
		return lws[0]
	}
	return &multiListWatch{subs: lws}
}

// multiListWatch reads one resource of one TP through several list/watches
// (one per served namespace) as if they were one: a list is all the
// sub-lists' items, a watch all the sub-watches' events. The feed over it
// stays one per kind and partition, and its lists replace the kind's whole
// set in the index, as an unscoped feed's do.
//
// Each sub-watch resumes from its own resourceVersion: its list's, then its
// last delivered event's. The one the reflector hands back cannot say that:
// events of different sub-watches reach it out of order, so the newest it
// saw may be newer than what another sub-watch has delivered, whose events
// in between would be lost.
type multiListWatch struct {
	subs []listWatcher

	mu  sync.Mutex
	gen uint64   // counts lists; a watch of an older list records nothing
	rvs []string // per sub: the resourceVersion it has delivered up to
}

// ListWithContext lists every sub in turn. Each sub-list is one page: a
// continue token cannot span several lists, and a namespace's list is small.
func (m *multiListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.Limit, opts.Continue = 0, ""
	m.mu.Lock()
	prev := slices.Clone(m.rvs)
	m.mu.Unlock()
	var out runtime.Object
	var items []runtime.Object
	rvs := make([]string, len(m.subs))
	for i, lw := range m.subs {
		o := opts
		if prev != nil && o.ResourceVersion != "" && o.ResourceVersion != "0" {
			o.ResourceVersion = prev[i] // no older than what this sub delivered
		}
		list, err := lw.ListWithContext(ctx, o)
		if err != nil {
			return nil, err
		}
		objs, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		lm, err := meta.ListAccessor(list)
		if err != nil {
			return nil, err
		}
		rvs[i] = lm.GetResourceVersion()
		items = append(items, objs...)
		if out == nil {
			out = list
		}
	}
	// out keeps the first sub-list's resourceVersion: the reflector only
	// hands it back to WatchWithContext, which uses rvs.
	if err := meta.SetList(out, items); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.gen++
	m.rvs = rvs
	m.mu.Unlock()
	return out, nil
}

// WatchWithContext watches every sub from where it is.
func (m *multiListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	m.mu.Lock()
	gen, rvs := m.gen, slices.Clone(m.rvs)
	m.mu.Unlock()
	w := &mergedWatch{m: m, gen: gen, out: make(chan watch.Event), done: make(chan struct{}), closed: make(chan struct{})}
	for i, lw := range m.subs {
		o := opts
		if rvs != nil {
			o.ResourceVersion = rvs[i]
		}
		sub, err := lw.WatchWithContext(ctx, o)
		if err != nil {
			for _, s := range w.subs {
				s.Stop()
			}
			return nil, err
		}
		w.subs = append(w.subs, sub)
	}
	w.wg.Add(len(w.subs))
	for i, sub := range w.subs {
		go w.forward(i, sub)
	}
	go func() {
		w.wg.Wait()
		close(w.out)
		close(w.closed)
	}()
	return w, nil
}

// delivered records that sub i of list gen has delivered obj.
func (m *multiListWatch) delivered(gen uint64, i int, obj runtime.Object) {
	a, err := meta.Accessor(obj)
	if err != nil || a.GetResourceVersion() == "" {
		return
	}
	m.mu.Lock()
	if m.gen == gen {
		m.rvs[i] = a.GetResourceVersion()
	}
	m.mu.Unlock()
}

// mergedWatch is the sub-watches' events on one channel. When one
// sub-watch ends they all end, and the reflector watches again, each sub
// from its own resourceVersion.
type mergedWatch struct {
	m    *multiListWatch
	gen  uint64
	subs []watch.Interface
	out  chan watch.Event

	halted sync.Once
	done   chan struct{} // closed by halt
	wg     sync.WaitGroup
	closed chan struct{} // closed once every forward has returned
}

func (w *mergedWatch) forward(i int, sub watch.Interface) {
	defer w.wg.Done()
	defer w.halt()
	for ev := range sub.ResultChan() {
		select {
		case w.out <- ev:
		case <-w.done:
			return
		}
		// Recorded before Stop returns (it waits for this goroutine), so
		// the next watch resumes after every event the reflector has had.
		if ev.Type != watch.Error {
			w.m.delivered(w.gen, i, ev.Object)
		}
	}
}

func (w *mergedWatch) halt() {
	w.halted.Do(func() {
		close(w.done)
		for _, s := range w.subs {
			s.Stop()
		}
	})
}

// Stop ends every sub-watch and returns once no event is in flight.
func (w *mergedWatch) Stop() {
	w.halt()
	<-w.closed
}

// ResultChan is the merged events; it closes after Stop or when a
// sub-watch ends.
func (w *mergedWatch) ResultChan() <-chan watch.Event { return w.out }

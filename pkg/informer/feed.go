package informer

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Sink receives what a Feed lists and watches: every object of a full list
// (Replace), then each change. It is client-go's cache.ReflectorStore; a
// Sink keys objects as its job needs (tenant/namespace/name for the kube-proxy
// harness, UID for pkg/tporigin, the DNS index's own keys), never by namespace/name
// alone.
type Sink = cache.ReflectorStore

// DefaultBackoff is how long a Feed waits before it lists again after a
// failure: from 100ms, doubling, at most 500ms plus a jitter of a quarter,
// so a TP that answers again (or a 410 Gone) is relisted within 625ms, and
// its programs answer its new state within a second (TestArktosRestarts,
// docs/benchmarks.md). client-go's default waits up to a minute; a cap of
// 4s once cost most restarts of a real Arktos TP about 4s. A TP that stays
// down costs each feed two refused connections a second, and only
// partition-dns and the harnesses run feeds (the patched kubelet and
// kube-proxy keep Arktos's own informers).
var DefaultBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.25, Steps: math.MaxInt32, Cap: 500 * time.Millisecond}

// FeedOptions configure a Feed.
type FeedOptions struct {
	// Name identifies the feed in client-go's logs: "partition-dns tp1 services".
	Name string
	// Resync is the period of Resync calls on the sink; 0 never.
	Resync time.Duration
	// Backoff replaces DefaultBackoff.
	Backoff *wait.Backoff
	// Clock replaces the real clock (tests).
	Clock clock.Clock
	// PageSize, when positive and the sink is a PagedSink, lists in pages
	// of that many objects (limit and continue, a consistent read) and
	// hands each page to the sink before the next is fetched, so that a
	// list never holds more than one page of API objects.
	PageSize int64
	// PageGate, when set, is held (one token) while a page is fetched and
	// staged: feeds that share it (all TPs' feeds of one program) list one
	// page at a time, and the peak memory of their initial lists does not
	// grow with their number.
	PageGate chan struct{}
	// PageGateHold is the longest a page holds the gate (DefaultPageGateHold
	// when zero): a TP that does not answer must not stop the others from
	// listing. A page that takes longer goes on without the gate.
	PageGateHold time.Duration
}

// DefaultPageGateHold is FeedOptions.PageGateHold's default: pages take
// milliseconds, so only a TP that hangs holds the gate this long.
const DefaultPageGateHold = 2 * time.Second

// PagedSink is a Sink that takes a list page by page (FeedOptions.PageSize):
// StartList begins every (re)list, ListPage hands over each page, and the
// Replace that follows, with no items of its own, ends it: everything since
// StartList is one full list, and what it lacked is gone. A sink may stage
// the pages and apply them at the end, or apply each as it comes and delete
// what the list lacked at the end (pkg/dns/source does); a list that fails
// half way never ends, and the next one starts over with StartList.
type PagedSink interface {
	Sink
	StartList()
	ListPage(items []any) error
}

// Feed runs one list/watch into a Sink with a client-go reflector: a full
// list, then a watch from its resourceVersion; after a 410 Gone or a lost
// connection it lists again (within DefaultBackoff). With the list/watches of
// this package it never uses watch-list.
type Feed struct {
	r      *cache.Reflector
	sink   Sink
	synced atomic.Bool
}

// NewFeed prepares a Feed of lw into sink; Run starts it. expected is the
// type of object lw delivers (nil accepts any, for EndpointsListWatch).
// A client-go ListerWatcher without context methods becomes one with
// cache.ToListerWatcherWithContext.
func NewFeed(lw cache.ListerWatcherWithContext, expected any, sink Sink, o FeedOptions) *Feed {
	f := &Feed{sink: sink}
	backoff := o.Backoff
	if backoff == nil {
		b := DefaultBackoff
		backoff = &b
	}
	if ps, ok := sink.(PagedSink); ok && o.PageSize > 0 {
		hold := o.PageGateHold
		if hold <= 0 {
			hold = DefaultPageGateHold
		}
		lw = pagedList{ListerWatcherWithContext: lw, sink: ps, size: o.PageSize, gate: o.PageGate, hold: hold}
	}
	f.r = cache.NewReflectorWithOptions(listThenWatch{lw}, expected, (*feedSink)(f), cache.ReflectorOptions{
		Name: o.Name, TypeDescription: o.Name, ResyncPeriod: o.Resync, Backoff: backoff, Clock: o.Clock,
	})
	return f
}

// Run lists, then watches, until ctx ends.
func (f *Feed) Run(ctx context.Context) { f.r.RunWithContext(ctx) }

// HasSynced reports whether a full list has reached the sink.
func (f *Feed) HasSynced() bool { return f.synced.Load() }

// LastSyncResourceVersion is the resourceVersion the feed has reached.
func (f *Feed) LastSyncResourceVersion() string { return f.r.LastSyncResourceVersion() }

// listThenWatch makes a reflector list and then watch whatever lw is: a
// watch-list is ignored by Arktos, and client-go collects its initial events
// in a temporary store keyed by namespace/name, where two tenants' objects of
// equal name collide.
//
// It is also the one place that gives tpkit's list/watches, which implement
// only the context forms, the forms without a context that client-go's
// ListerWatcher still has.
type listThenWatch struct {
	cache.ListerWatcherWithContext
}

func (l listThenWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

func (l listThenWatch) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

// IsWatchListSemanticsUnSupported tells client-go's reflector not to use
// watch-list.
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// feedSink passes the reflector's calls on and notes the first full list.
type feedSink Feed

func (s *feedSink) Add(obj any) error    { return s.sink.Add(obj) }
func (s *feedSink) Update(obj any) error { return s.sink.Update(obj) }
func (s *feedSink) Delete(obj any) error { return s.sink.Delete(obj) }
func (s *feedSink) Resync() error        { return s.sink.Resync() }

func (s *feedSink) Replace(list []any, rv string) error {
	if err := s.sink.Replace(list, rv); err != nil {
		return err
	}
	s.synced.Store(true)
	return nil
}

// pagedList lists page by page into a PagedSink and hands the reflector an
// empty list with the list's resourceVersion: the reflector's Replace then
// ends the staged list (see PagedSink).
type pagedList struct {
	cache.ListerWatcherWithContext
	sink PagedSink
	size int64
	gate chan struct{}
	hold time.Duration
}

func (p pagedList) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	p.sink.StartList()
	// A consistent read: resourceVersion "0" would be served from the
	// API server's watch cache, which ignores limit. The continue token
	// keeps every page at the first one's resourceVersion.
	opts.ResourceVersion, opts.ResourceVersionMatch, opts.Limit, opts.Continue = "", "", p.size, ""
	for {
		list, cont, err := p.page(ctx, opts)
		if err != nil {
			return nil, err
		}
		if cont == "" {
			if err := meta.SetList(list, nil); err != nil {
				return nil, err
			}
			return list, nil
		}
		opts.Continue = cont
	}
}

// page fetches one page and stages its items, holding the gate; it returns
// the page and its continue token.
func (p pagedList) page(ctx context.Context, opts metav1.ListOptions) (runtime.Object, string, error) {
	if p.gate != nil {
		select {
		case p.gate <- struct{}{}:
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
		// Released when the page is done, or after hold, whichever comes
		// first: a hanging TP holds no page in memory, and must not hold
		// the other TPs' lists either.
		var once sync.Once
		release := func() { once.Do(func() { <-p.gate }) }
		t := time.AfterFunc(p.hold, release)
		defer func() { t.Stop(); release() }()
	}
	list, err := p.ListerWatcherWithContext.ListWithContext(ctx, opts)
	if err != nil {
		return nil, "", err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, "", err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, "", err
	}
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	if err := p.sink.ListPage(items); err != nil {
		return nil, "", err
	}
	return list, lm.GetContinue(), nil
}

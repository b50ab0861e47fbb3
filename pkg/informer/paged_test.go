package informer_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
)

// pagedSink records what a paged feed hands it.
type pagedSink struct {
	mu       sync.Mutex
	starts   int
	pages    []int    // items per page, since the last StartList
	replaced []string // names of the full list, once Replace ends it
	staged   []string
	rv       string
	watched  []string
}

func (s *pagedSink) StartList() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starts++
	s.pages, s.staged = nil, nil
}

func (s *pagedSink) ListPage(items []any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages = append(s.pages, len(items))
	for _, it := range items {
		s.staged = append(s.staged, it.(*corev1.Service).Name)
	}
	return nil
}

func (s *pagedSink) Replace(list []any, rv string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(list) != 0 {
		return fmt.Errorf("a paged list's Replace got %d items", len(list))
	}
	s.replaced, s.rv = s.staged, rv
	return nil
}

func (s *pagedSink) Add(obj any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watched = append(s.watched, obj.(*corev1.Service).Name)
	return nil
}
func (s *pagedSink) Update(obj any) error { return s.Add(obj) }
func (s *pagedSink) Delete(any) error     { return nil }
func (s *pagedSink) Resync() error        { return nil }

func (s *pagedSink) snapshot() (starts int, pages []int, replaced []string, rv string, watched []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts, append([]int(nil), s.pages...), append([]string(nil), s.replaced...), s.rv, append([]string(nil), s.watched...)
}

// gatedLW counts how many lists run at once and can fail one page.
type gatedLW struct {
	*informer.ListWatch
	running, most *atomic.Int32
	failPage      atomic.Int32 // fail the nth page (1-based) once; 0 never
	pagesSeen     atomic.Int32
}

func (g *gatedLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	n := g.running.Add(1)
	defer g.running.Add(-1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	time.Sleep(time.Millisecond) // widen the window in which two pages could overlap
	if p := g.pagesSeen.Add(1); p == g.failPage.Load() {
		g.failPage.Store(0)
		return nil, fmt.Errorf("page %d: connection reset", p)
	}
	return g.ListWatch.ListWithContext(ctx, o)
}

func (g *gatedLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return g.ListWithContext(context.Background(), o)
}

// acmeOnly reads the tenant acme, whose services the paging tests seed,
// and not the TP's master service system/default/kubernetes.
var acmeOnly = informer.Scope{Tenant: "acme"}

// TestPagedFeed: with a PageSize and a PagedSink, a feed lists 5 services in
// pages of 2 (a consistent read with continue tokens against fake-tp), hands
// every page over before the next is read, and ends the list with an empty
// Replace at the list's resourceVersion; a page that fails makes the next
// list start over, and nothing partial is applied. Two feeds sharing a gate
// never read pages at the same time.
func TestPagedFeed(t *testing.T) {
	tp := faketp.StartT(t, faketp.Options{Partitions: 1}).TPs()[0]
	for i := 0; i < 5; i++ {
		s := named("acme", "web", "api")
		s.Name = fmt.Sprintf("s%d", i)
		if err := tp.Seed(s); err != nil {
			t.Fatal(err)
		}
	}
	c, err := partitiontest.NewClients(tenancyk8s.WrapConfig(tp.RESTConfig()), nil)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := informer.NewClients(tenancyk8s.WrapConfig(tp.RESTConfig()), nil)
	if err != nil {
		t.Fatal(err)
	}
	var running, most atomic.Int32
	gate := make(chan struct{}, 1)
	var sinks []*pagedSink
	var feeds []*informer.Feed
	for i := 0; i < 2; i++ {
		lw, err := informer.NewListWatch(lc, informer.Services, acmeOnly)
		if err != nil {
			t.Fatal(err)
		}
		g := &gatedLW{ListWatch: lw, running: &running, most: &most}
		if i == 0 {
			g.failPage.Store(2)
		}
		s := &pagedSink{}
		sinks = append(sinks, s)
		feeds = append(feeds, informer.NewFeed(g, &corev1.Service{}, s, informer.FeedOptions{
			Name: fmt.Sprintf("paged %d", i), PageSize: 2, PageGate: gate,
		}))
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, f := range feeds {
		wg.Add(1)
		go func() { defer wg.Done(); f.Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for !(feeds[0].HasSynced() && feeds[1].HasSynced()) {
		if time.Now().After(deadline) {
			t.Fatal("the paged feeds did not sync")
		}
		time.Sleep(5 * time.Millisecond)
	}
	want := []string{"s0", "s1", "s2", "s3", "s4"}
	for i, s := range sinks {
		starts, pages, replaced, rv, _ := s.snapshot()
		if fmt.Sprint(pages) != "[2 2 1]" || fmt.Sprint(replaced) != fmt.Sprint(want) || rv == "" {
			t.Errorf("feed %d: pages %v, list %v at resourceVersion %q; want pages [2 2 1] of %v", i, pages, replaced, rv, want)
		}
		wantStarts := 1
		if i == 0 {
			wantStarts = 2 // the failed list, then the one that worked
		}
		if starts != wantStarts {
			t.Errorf("feed %d: %d lists started, want %d", i, starts, wantStarts)
		}
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d pages were read at once through one gate", m)
	}
	// The watch follows the list.
	s := named("acme", "web", "api")
	s.Name = "s5"
	if _, err := c.CoreV1().Services("web").Create(tenancyk8s.WithTenant(t.Context(), "acme"), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, _, _, watched := sinks[1].snapshot(); len(watched) == 1 && watched[0] == "s5" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch after the paged list delivered nothing")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hangingLW is a TP that accepts the list and never answers.
type hangingLW struct{ *informer.ListWatch }

func (h hangingLW) ListWithContext(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (h hangingLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return h.ListWithContext(context.Background(), o)
}

// TestPageGateSurvivesAHangingTP: a TP whose list never answers holds the
// shared gate no longer than PageGateHold, so another TP's feed still lists
// and syncs.
func TestPageGateSurvivesAHangingTP(t *testing.T) {
	tp := faketp.StartT(t, faketp.Options{Partitions: 1}).TPs()[0]
	if err := tp.Seed(named("acme", "web", "api")); err != nil {
		t.Fatal(err)
	}
	c, err := informer.NewClients(tenancyk8s.WrapConfig(tp.RESTConfig()), nil)
	if err != nil {
		t.Fatal(err)
	}
	lw, err := informer.NewListWatch(c, informer.Services, acmeOnly)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{}, 1)
	o := informer.FeedOptions{PageSize: 2, PageGate: gate, PageGateHold: 50 * time.Millisecond}
	o.Name = "hanging"
	hanging := informer.NewFeed(hangingLW{lw}, &corev1.Service{}, &pagedSink{}, o)
	o.Name = "healthy"
	healthySink := &pagedSink{}
	healthy := informer.NewFeed(lw, &corev1.Service{}, healthySink, o)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); hanging.Run(ctx) }()
	// The hanging feed takes the gate first.
	deadline := time.Now().Add(10 * time.Second)
	for len(gate) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	go func() { defer wg.Done(); healthy.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	for !healthy.HasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("a TP that never answers kept the other TP from listing")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, _, replaced, _, _ := healthySink.snapshot(); len(replaced) != 1 {
		t.Fatalf("the healthy feed listed %v", replaced)
	}
	if hanging.HasSynced() {
		t.Fatal("the hanging feed synced")
	}
}

package kubeproxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock whose time moves only by Step.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// newTimer is closed (and replaced) when a timer is made, so that
	// waitTimer waits for the runner without polling.
	newTimer chan struct{}
}

type fakeTimer struct {
	c        chan time.Time
	deadline time.Time
	clk      *fakeClock
	done     bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_700_000_000, 0), newTimer: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: make(chan time.Time, 1), deadline: c.now.Add(d), clk: c}
	c.timers = append(c.timers, t)
	close(c.newTimer)
	c.newTimer = make(chan struct{})
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// Step moves the time by d and fires the timers due.
func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if !t.done && !c.now.Before(t.deadline) {
			t.done = true
			t.c <- c.now
		}
	}
}

// waiting returns the durations until the pending timers fire, and a
// channel closed when the next timer is made.
func (c *fakeClock) waiting() ([]time.Duration, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, t := range c.timers {
		if !t.done {
			out = append(out, t.deadline.Sub(c.now))
		}
	}
	return out, c.newTimer
}

// waitTimer waits until the runner waits on a timer of d.
func (c *fakeClock) waitTimer(t *testing.T, d time.Duration) {
	t.Helper()
	hang := time.NewTimer(30 * time.Second) // a hang guard only
	defer hang.Stop()
	for {
		pending, next := c.waiting()
		for _, w := range pending {
			if w == d {
				return
			}
		}
		select {
		case <-next:
		case <-hang.C:
			t.Fatalf("the runner never waited %s (timers %v)", d, pending)
		}
	}
}

type call struct {
	c      Changes
	ports  int
	synced bool
	at     time.Time
}

func TestRunner(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	v := NewView([]int{tp0, tp1}, Options{})
	calls := make(chan call)
	release := make(chan error)
	fn := func(_ context.Context, s *Snapshot, c Changes) error {
		calls <- call{c: c, ports: s.Len(), synced: v.Synced(), at: clk.Now()}
		return <-release
	}
	var events []SyncEvent
	var logged []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := NewRunner(v, fn, RunnerOptions{MinInterval: time.Second, RetryInterval: 5 * time.Second, Clock: clk,
		OnSync: func(e SyncEvent) { events = append(events, e) },
		Logf:   func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	done := make(chan struct{})
	go func() {
		r.Run(ctx)
		close(done)
	}()

	v.OnServiceAdd(svcRec("", "kube-system", "kube-dns", "10.0.0.10", port("dns", 53)), tp0)
	v.OnServiceAdd(svcRec("", "kube-system", "kube-dns", "10.1.0.10", port("dns", 53)), tp1)
	v.OnServiceSynced(tp0)
	v.OnEndpointsSynced(tp0)
	v.OnServiceSynced(tp1)
	// A sync now would record synced=false: the first must wait for tp1's
	// endpoints too.
	v.OnEndpointsSynced(tp1)
	first := <-calls
	if !first.synced || !first.c.Full || first.ports != 2 {
		t.Fatalf("first sync %+v: want a full one with 2 ports, after every TP synced", first)
	}
	// While the dataplane is busy, changes pile up and come as one batch,
	// MinInterval after the first sync.
	for i := 0; i < 5; i++ {
		v.OnServiceAdd(svcRec("", "default", fmt.Sprintf("s%d", i), fmt.Sprintf("10.0.1.%d", i), port("p", 80)), tp0)
	}
	release <- nil
	clk.waitTimer(t, time.Second)
	clk.Step(time.Second)
	batch := <-calls
	if batch.c.Full || len(batch.c.Services) != 5 || batch.ports != 7 || batch.at.Sub(start) != time.Second {
		t.Fatalf("batched sync %+v, want 5 changed services, 7 ports, 1s after the first", batch)
	}
	// The batch fails: it is retried as a full one RetryInterval later, with
	// no new event.
	release <- errors.New("iptables-restore failed")
	clk.waitTimer(t, 5*time.Second)
	clk.Step(5 * time.Second)
	retry := <-calls
	if !retry.c.Full || retry.at.Sub(start) != 6*time.Second {
		t.Fatalf("retry %+v, want a full one 5s after the failure", retry)
	}
	release <- nil
	// The next change is partial again.
	v.OnServiceDelete(svcRec("", "kube-system", "kube-dns", ""), tp1)
	clk.waitTimer(t, time.Second)
	clk.Step(time.Second)
	next := <-calls
	if next.c.Full || len(next.c.Services) != 1 || next.ports != 6 {
		t.Fatalf("after recovery %+v", next)
	}
	release <- nil
	cancel()
	<-done

	st := r.Stats()
	want := RunnerStats{FullSyncs: 2, PartialSyncs: 1, PartialFailures: 1, ChangedServices: 6, ServicePorts: 6, LastSuccess: start.Add(7 * time.Second)}
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	if len(events) != 4 || events[1].Err == nil || events[1].Full || events[1].ChangedServices != 5 || !events[2].Full {
		t.Errorf("sync events %+v", events)
	}
	if len(logged) != 1 || !contains(logged[0], "iptables-restore failed") || !contains(logged[0], "1 in a row") {
		t.Errorf("log %q, want the failure", logged)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestRunnerBackoffAndMaxInterval: failures in a row are retried after
// RetryInterval doubling up to MaxInterval, a success resets it, and with
// no change for MaxInterval the runner syncs in full anyway.
func TestRunnerBackoffAndMaxInterval(t *testing.T) {
	clk := newFakeClock()
	v := NewView([]int{tp0}, Options{})
	calls := make(chan Changes)
	results := make(chan error)
	fn := func(_ context.Context, s *Snapshot, c Changes) error {
		calls <- c
		return <-results
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		NewRunner(v, fn, RunnerOptions{MinInterval: time.Second, RetryInterval: 2 * time.Second, MaxInterval: 10 * time.Second, Clock: clk}).Run(ctx)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	v.OnServiceAdd(svcRec("", "ns", "a", "10.0.0.1", port("p", 1)), tp0)
	v.OnServiceSynced(tp0)
	v.OnEndpointsSynced(tp0)
	if c := <-calls; !c.Full {
		t.Fatalf("first sync %+v", c)
	}
	// Four failures in a row: retries after 2s, 4s, 8s, then 10s (the cap).
	for _, wait := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second} {
		results <- errors.New("dataplane down")
		clk.waitTimer(t, wait)
		clk.Step(wait)
		if c := <-calls; !c.Full {
			t.Fatalf("retry after %s: %+v, want a full sync", wait, c)
		}
	}
	// Success: no retry; MaxInterval later a full sync without any change.
	results <- nil
	clk.waitTimer(t, 10*time.Second)
	clk.Step(10 * time.Second)
	if c := <-calls; !c.Full {
		t.Fatalf("periodic sync %+v, want a full one", c)
	}
	// After a success, the next failure waits RetryInterval again.
	results <- errors.New("again")
	clk.waitTimer(t, 2*time.Second)
	clk.Step(2 * time.Second)
	<-calls
	results <- nil
}

// TestRunnerRealClock: the default clock works (no fake in sight).
func TestRunnerRealClock(t *testing.T) {
	v := NewView([]int{tp0}, Options{})
	synced := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go NewRunner(v, func(_ context.Context, s *Snapshot, c Changes) error {
		synced <- s.Len()
		return nil
	}, RunnerOptions{MinInterval: time.Millisecond}).Run(ctx)
	v.OnServiceAdd(svcRec("", "ns", "a", "10.0.0.1", port("p", 1)), tp0)
	v.OnServiceSynced(tp0)
	v.OnEndpointsSynced(tp0)
	if n := <-synced; n != 1 {
		t.Fatalf("first sync saw %d ports", n)
	}
	v.OnServiceAdd(svcRec("", "ns", "b", "10.0.0.2", port("p", 1)), tp0)
	if n := <-synced; n != 2 {
		t.Fatalf("second sync saw %d ports", n)
	}
}

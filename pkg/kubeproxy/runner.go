package kubeproxy

import (
	"context"
	"sync"
	"time"
)

// SyncFunc applies a snapshot to a dataplane. c says what changed since the
// previous call; c.Full asks for everything to be rewritten. The snapshot
// belongs to the Runner: read it only during the call.
type SyncFunc func(ctx context.Context, s *Snapshot, c Changes) error

// RunnerOptions bound a Runner's pace.
type RunnerOptions struct {
	// MinInterval is the least time between two syncs; changes arriving
	// meanwhile are batched into the next one. Zero means 1s, upstream
	// kube-proxy's default.
	MinInterval time.Duration
	// RetryInterval is the wait before a full sync after a failed one; it
	// doubles with each failure in a row, up to MaxInterval. Zero means 5s.
	RetryInterval time.Duration
	// MaxInterval is the most time between two syncs: with no change for
	// that long, the runner does a full sync anyway, which repairs a
	// dataplane changed behind its back (kube-proxy's --iptables-sync-period).
	// Zero means 30s, upstream kube-proxy's default; it is never below
	// MinInterval.
	MaxInterval time.Duration
	// Clock replaces the wall clock (tests).
	Clock Clock
	// Logf, when set, receives the runner's log lines (failed syncs); nil
	// discards them.
	Logf func(format string, args ...interface{})
	// OnSync, when set, is called after every sync, from the runner's
	// goroutine, once the next sync is scheduled: pkg/kubeproxy/k8s's
	// Metrics.Observe publishes these as Prometheus metrics.
	OnSync func(SyncEvent)
}

// SyncEvent describes one finished sync.
type SyncEvent struct {
	// Full is true for a full sync.
	Full bool
	// ChangedServices is the number of services handed to a partial sync.
	ChangedServices int
	// ServicePorts is the number of service ports in the snapshot.
	ServicePorts int
	// Duration is how long the SyncFunc took; End is when it returned.
	Duration time.Duration
	End      time.Time
	// Err is the SyncFunc's error, nil when the sync succeeded.
	Err error
}

// RunnerStats are a runner's counters.
type RunnerStats struct {
	// FullSyncs and PartialSyncs count the successful syncs of each kind,
	// FullFailures and PartialFailures the failed ones.
	FullSyncs, PartialSyncs       uint64
	FullFailures, PartialFailures uint64
	// ChangedServices counts the services handed to partial syncs.
	ChangedServices uint64
	// ServicePorts is the number of service ports at the last sync.
	ServicePorts int
	// LastSuccess is when the last successful sync ended; zero before.
	LastSuccess time.Time
	// LastFailed is true when the last sync failed.
	LastFailed bool
}

// Runner is the bounded sync loop between a View and a dataplane: it waits
// until the view is synced in every TP, applies pending changes to its
// snapshot in batches, at most once per MinInterval, and calls the SyncFunc
// with what changed. After a failed sync it retries with a full sync.
type Runner struct {
	view *View
	fn   SyncFunc
	opts RunnerOptions
	snap *Snapshot

	mu    sync.Mutex
	stats RunnerStats
}

// NewRunner returns a runner for v and fn; Run starts it.
func NewRunner(v *View, fn SyncFunc, o RunnerOptions) *Runner {
	if o.MinInterval <= 0 {
		o.MinInterval = time.Second
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = 5 * time.Second
	}
	if o.MaxInterval <= 0 {
		o.MaxInterval = 30 * time.Second
	}
	if o.MaxInterval < o.MinInterval {
		o.MaxInterval = o.MinInterval
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	return &Runner{view: v, fn: fn, opts: o, snap: NewSnapshot()}
}

// Stats returns the runner's counters.
func (r *Runner) Stats() RunnerStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Run syncs until ctx ends. It waits for a change, for the retry after a
// failure, or for MaxInterval after the last sync (then a full sync), and
// never syncs twice within MinInterval: kube-proxy's BoundedFrequencyRunner
// with exponential retries.
func (r *Runner) Run(ctx context.Context) {
	clk := r.opts.Clock
	var last time.Time
	failures := 0
	var retry, periodic Timer
	defer func() {
		for _, t := range []Timer{retry, periodic} {
			if t != nil {
				t.Stop()
			}
		}
	}()
	for {
		due := false // MaxInterval passed: sync in full even without a change
		select {
		case <-ctx.Done():
			return
		case <-r.view.Changed():
		case <-timerC(retry):
			retry = nil
		case <-timerC(periodic):
			periodic, due = nil, true
		}
		if !r.view.Synced() {
			continue // the first sync must see every TP
		}
		if wait := r.opts.MinInterval - clk.Now().Sub(last); !last.IsZero() && wait > 0 {
			t := clk.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
		c := r.view.Apply(r.snap)
		if failures > 0 || due {
			c = Changes{Full: true}
		}
		if !c.Full && len(c.Services) == 0 {
			continue
		}
		start := clk.Now()
		err := r.fn(ctx, r.snap, c)
		last = clk.Now()
		ev := SyncEvent{Full: c.Full, ChangedServices: len(c.Services), ServicePorts: r.snap.Len(), Duration: last.Sub(start), End: last, Err: err}
		r.record(ev)
		// The timers are armed before OnSync, so that whoever hears of a
		// sync can count on the next one being scheduled.
		if periodic != nil {
			periodic.Stop()
		}
		periodic = clk.NewTimer(r.opts.MaxInterval)
		if retry != nil {
			retry.Stop()
			retry = nil
		}
		if err == nil {
			failures = 0
		} else {
			failures++
			wait := r.retryWait(failures)
			if r.opts.Logf != nil {
				r.opts.Logf("kubeproxy: dataplane sync failed (%d in a row); retrying with a full sync in %s: %v", failures, wait, err)
			}
			retry = clk.NewTimer(wait)
		}
		if r.opts.OnSync != nil {
			r.opts.OnSync(ev)
		}
	}
}

// retryWait is RetryInterval doubled for each failure after the first, at
// most MaxInterval.
func (r *Runner) retryWait(failures int) time.Duration {
	wait := r.opts.RetryInterval
	for i := 1; i < failures && wait < r.opts.MaxInterval; i++ {
		wait *= 2
	}
	if wait > r.opts.MaxInterval {
		wait = r.opts.MaxInterval
	}
	return wait
}

// timerC is t's channel, or nil (never ready) without a timer.
func timerC(t Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C()
}

func (r *Runner) record(ev SyncEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.stats
	s.ServicePorts = ev.ServicePorts
	s.ChangedServices += uint64(ev.ChangedServices)
	s.LastFailed = ev.Err != nil
	switch {
	case ev.Full && ev.Err == nil:
		s.FullSyncs++
	case ev.Full:
		s.FullFailures++
	case ev.Err == nil:
		s.PartialSyncs++
	default:
		s.PartialFailures++
	}
	if ev.Err == nil {
		s.LastSuccess = ev.End
	}
}

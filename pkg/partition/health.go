package partition

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// Status is one TP's health, as served by /readyz and metrics.
type Status struct {
	Name  string
	Index int
	// Synced is true once every informer started on the TP has synced.
	Synced bool
	// Reachable is true when the last request to the TP got an answer that
	// was not a server-side failure. False until the first answer.
	Reachable bool
	// Stale is true while the TP, synced once, is unreachable: its
	// consumers serve what they last read from it.
	Stale bool
	// LastError is the most recent failure talking to the TP, or "".
	LastError     string
	LastErrorTime time.Time
	// LastEvent is when data last arrived from the TP (a list or watch body).
	LastEvent time.Time
	// Errors counts failed requests since start.
	Errors uint64
	// Transitions counts the TP's state changes since start.
	Transitions Transitions
}

// Transitions counts a TP's changes of state. Each change is logged once,
// when it happens, and exported as tpkit_partition_transitions_total.
type Transitions struct {
	// Synced is 1 once every consumer has listed the TP; a TP syncs once.
	Synced uint64
	// Stale counts the times the synced TP became unreachable.
	Stale uint64
	// Recovered counts the times a stale TP answered again.
	Recovered uint64
}

// health is updated by every request through the TP's transport, and holds
// the TP's state: synced (once), then stale or not as requests fail or get
// answers. State changes are logged under mu, so the log follows the order
// of the changes.
type health struct {
	name      string
	index     int
	lastEvent atomic.Int64 // unix nanoseconds
	errors    atomic.Uint64

	mu          sync.Mutex
	log         klog.Logger
	reachable   bool
	synced      bool
	stale       bool
	staleSince  time.Time
	lastErr     error
	lastErrorAt time.Time
	transitions Transitions
}

func newHealth(name string, index int) *health {
	return &health{name: name, index: index, log: klog.Background()}
}

// setLogger makes the TP's transitions go to l (Set.Start's context's).
func (h *health) setLogger(l klog.Logger) {
	h.mu.Lock()
	h.log = l
	h.mu.Unlock()
}

func (h *health) fail(err error) {
	h.errors.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reachable = false
	h.lastErr, h.lastErrorAt = err, time.Now()
	h.update()
}

func (h *health) answered() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reachable = true
	h.update()
}

// markSynced records the TP's first sync, which took d.
func (h *health) markSynced(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.synced = true
	h.transitions.Synced++
	h.log.Info("Tenant partition synced", "partition", h.name, "index", h.index, "duration", d.Round(time.Millisecond))
	h.update()
}

// update logs and counts a change of staleness: a synced TP is stale while
// its last request failed. Callers hold mu.
func (h *health) update() {
	stale := h.synced && !h.reachable
	if stale == h.stale {
		return
	}
	h.stale = stale
	if stale {
		h.transitions.Stale++
		h.staleSince = time.Now()
		h.log.Info("Tenant partition is stale: unreachable, its last known state is served", "partition", h.name, "index", h.index, "err", h.lastErr)
		return
	}
	h.transitions.Recovered++
	h.log.Info("Tenant partition recovered", "partition", h.name, "index", h.index, "staleFor", time.Since(h.staleSince).Round(time.Millisecond))
}

func (h *health) status(synced bool) Status {
	s := Status{Name: h.name, Index: h.index, Synced: synced, Errors: h.errors.Load()}
	if t := h.lastEvent.Load(); t != 0 {
		s.LastEvent = time.Unix(0, t)
	}
	h.mu.Lock()
	s.Reachable, s.Stale, s.Transitions = h.reachable, h.stale, h.transitions
	if h.lastErr != nil {
		s.LastError, s.LastErrorTime = h.lastErr.Error(), h.lastErrorAt
	}
	h.mu.Unlock()
	return s
}

// healthTransport records the outcome of every request to one TP. A
// connection failure or a 5xx that means "server unavailable" marks the TP
// unreachable; any other answer marks it reachable.
type healthTransport struct {
	h    *health
	base http.RoundTripper
}

func (t *healthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		if req.Context().Err() == nil { // a cancelled request says nothing about the TP
			t.h.fail(err)
		}
		return resp, err
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusInternalServerError:
		t.h.fail(fmt.Errorf("%s %s: %s", req.Method, req.URL.Path, resp.Status))
		return resp, nil
	}
	t.h.answered()
	if resp.Body != nil {
		resp.Body = &eventBody{ReadCloser: resp.Body, h: t.h}
	}
	return resp, nil
}

// eventBody stamps LastEvent whenever data arrives.
type eventBody struct {
	io.ReadCloser
	h *health
}

func (b *eventBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.h.lastEvent.Store(time.Now().UnixNano())
	}
	return n, err
}

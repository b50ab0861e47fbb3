package partition

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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
	// LastError is the most recent failure talking to the TP, or "".
	LastError     string
	LastErrorTime time.Time
	// LastEvent is when data last arrived from the TP (a list or watch body).
	LastEvent time.Time
	// Errors counts failed requests since start.
	Errors uint64
}

// health is updated by every request through the TP's transport.
type health struct {
	reachable atomic.Bool
	lastEvent atomic.Int64 // unix nanoseconds
	errors    atomic.Uint64

	mu          sync.Mutex
	lastError   string
	lastErrorAt time.Time
}

func (h *health) fail(err error) {
	h.reachable.Store(false)
	h.errors.Add(1)
	h.mu.Lock()
	h.lastError, h.lastErrorAt = err.Error(), time.Now()
	h.mu.Unlock()
}

func (h *health) status(name string, index int, synced bool) Status {
	s := Status{Name: name, Index: index, Synced: synced, Reachable: h.reachable.Load(), Errors: h.errors.Load()}
	if t := h.lastEvent.Load(); t != 0 {
		s.LastEvent = time.Unix(0, t)
	}
	h.mu.Lock()
	s.LastError, s.LastErrorTime = h.lastError, h.lastErrorAt
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
	t.h.reachable.Store(true)
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

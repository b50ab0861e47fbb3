package arktoshttp

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Handler serves GET list and watch of one core/v1 resource.
type Handler struct {
	// Resource is the plural resource name, such as "pods".
	Resource string
	// ListKind is the list's kind, such as "PodList".
	ListKind string

	mu     sync.Mutex
	items  []string
	rv     int
	events []chan string
}

// NewHandler returns a handler serving items (raw JSON objects) at
// resourceVersion 1.
func NewHandler(resource, listKind string, items ...string) *Handler {
	return &Handler{Resource: resource, ListKind: listKind, items: items, rv: 1}
}

// Send delivers a raw watch event ({"type":...,"object":...}) to every watch
// opened so far; watches opened later do not see it. Each watch buffers 16
// events, so tests wait for Watchers before sending.
func (h *Handler) Send(event string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range h.events {
		ch <- event
	}
}

// Watchers is the number of watches opened so far.
func (h *Handler) Watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.events)
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if r.Method != http.MethodGet || !(p == "/api/v1/"+h.Resource || strings.HasSuffix(p, "/"+h.Resource) && strings.HasPrefix(p, "/api/v1/")) {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	if q.Get("watch") != "true" && q.Get("watch") != "1" {
		h.mu.Lock()
		body := fmt.Sprintf(`{"kind":%q,"apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[%s]}`, h.ListKind, h.rv, strings.Join(h.items, ","))
		h.mu.Unlock()
		_, _ = w.Write([]byte(body))
		return
	}
	if q.Get("sendInitialEvents") == "true" {
		// Answer like a server without streaming lists, so the reflector
		// falls back to list+watch.
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400,"message":"sendInitialEvents is not supported"}`))
		return
	}
	ch := make(chan string, 16)
	h.mu.Lock()
	h.events = append(h.events, ch)
	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev := <-ch:
			_, _ = w.Write([]byte(ev + "\n"))
			w.(http.Flusher).Flush()
		}
	}
}

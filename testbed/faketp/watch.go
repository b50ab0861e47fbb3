package faketp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// maxWatchTimeout bounds a watch without timeoutSeconds, as kube-apiserver's
// --min-request-timeout does.
const maxWatchTimeout = 30 * time.Minute

// initialEventsAnnotation marks the bookmark that ends the initial events
// of a watch-list (sendInitialEvents=true).
const initialEventsAnnotation = metav1.InitialEventsAnnotationKey

// serveWatch streams events as Arktos's API server (kube-apiserver 1.18
// with its watch cache) does:
//   - resourceVersion "" or "0": synthetic ADDED events for the current
//     state, then changes;
//   - resourceVersion N: every change after N; when N is older than the
//     resource's watch window, a 200 stream whose only event is an ERROR
//     with a 410 Expired Status ("too old resource version: N (M)"); when N
//     is newer than the TP has issued, a plain 410;
//   - sendInitialEvents and resourceVersionMatch are ignored by default
//     (WatchListIgnored); WatchListServed streams the current state, a
//     bookmark annotated k8s.io/initial-events-end, then changes;
//   - allowWatchBookmarks: periodic BOOKMARK events with the version the
//     watch has reached;
//   - timeoutSeconds: the stream ends cleanly after that long.
//
// An object leaving or entering a selector appears as DELETED or ADDED.
// When the window moves past what an open stream has sent (a burst larger
// than the window, or a compaction) the stream ends with the same ERROR.
func (tp *TP) serveWatch(w http.ResponseWriter, r *http.Request, t target) {
	wr, err := tp.parseWatch(r.URL.Query(), t)
	if err != nil {
		writeError(w, err)
		return
	}
	var snapshot []*store.Object
	from := wr.from
	if wr.initial {
		snapshot, from, _ = tp.st().List(t.res.storeName(), wr.lo)
	}
	watcher, err := tp.st().Watch(t.res.storeName(), from)
	var gone []byte
	switch {
	case errors.Is(err, store.ErrTooNew):
		tp.expiredWatches.Add(1)
		writeError(w, errTooNewRV(from, tp.st().RV()))
		return
	case errors.Is(err, store.ErrGone):
		// As Arktos's watch cache: a 200 stream whose only event is an
		// ERROR carrying 410 Expired (sample 92).
		tp.expiredWatches.Add(1)
		gone = tooOld(from, tp.st().WindowStart(t.res.storeName()))
	case err != nil:
		writeError(w, storeError(err, t.res, ""))
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), wr.timeout)
	defer cancel()
	tp.metrics.watches.Inc()
	defer tp.metrics.watches.Dec()
	ws := newWatchStream(w, r, t.res)
	if gone != nil {
		writeEvent(ws.bw, "ERROR", gone)
		ws.flush()
		return
	}
	for _, o := range snapshot {
		ws.emit(store.Added, o)
	}
	if wr.sendInitial {
		writeBookmark(ws.bw, t.res, from, true)
	}
	if !ws.flush() {
		return
	}
	tp.streamEvents(ctx, ws, watcher, wr, t.res)
}

// watchRequest is what a watch asks for.
type watchRequest struct {
	lo        store.ListOptions
	sel       *selector
	bookmarks bool
	// initial sends the current objects first (as ADDED events), and
	// sendInitial ends them with the initial-events-end bookmark.
	initial, sendInitial bool
	timeout              time.Duration
	from                 uint64 // the resourceVersion to watch from, without initial events
}

// match reports whether an object is in the watch's scope and selection.
func (wr *watchRequest) match(o *store.Object) bool {
	if wr.lo.Tenant != "" && o.Tenant != wr.lo.Tenant {
		return false
	}
	if wr.lo.Namespace != "" && o.Namespace != wr.lo.Namespace {
		return false
	}
	return wr.sel.match(o)
}

// parseWatch reads a watch's query: selectors, bookmarks, the
// resourceVersion, sendInitialEvents (as the WatchList mode says) and the
// timeout.
func (tp *TP) parseWatch(q url.Values, t target) (*watchRequest, error) {
	sel, err := parseSelector(q, t.res)
	if err != nil {
		return nil, err
	}
	if t.kind == targetObject {
		sel.name = t.name
	}
	wr := &watchRequest{lo: t.listOptions(), sel: sel, bookmarks: q.Get("allowWatchBookmarks") == "true", timeout: maxWatchTimeout}
	wr.lo.Match = sel.match
	rvParam := q.Get("resourceVersion")
	wr.initial = rvParam == "" || rvParam == "0"
	if err := tp.parseSendInitialEvents(q, wr); err != nil {
		return nil, err
	}
	if ts := q.Get("timeoutSeconds"); ts != "" {
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || n < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %q", truncate(ts)))
		}
		if d := time.Duration(n) * time.Second; n > 0 && d < wr.timeout {
			wr.timeout = d
		}
	}
	if rvParam != "" && rvParam != "0" {
		if wr.from, err = strconv.ParseUint(rvParam, 10, 64); err != nil {
			return nil, errInvalid(t.res, "", "resourceVersion", rvParam, "must be a resourceVersion this server issued")
		}
	}
	if !wr.initial && (rvParam == "" || rvParam == "0") {
		// sendInitialEvents=false without a version: from now on.
		wr.from = tp.st().RV()
	}
	return wr, nil
}

// parseSendInitialEvents applies sendInitialEvents as the TP's WatchList
// mode says: refused (Kubernetes before the feature), ignored (Arktos) or
// served.
func (tp *TP) parseSendInitialEvents(q url.Values, wr *watchRequest) error {
	switch tp.opts.WatchList {
	case WatchListRejected:
		if q.Get("sendInitialEvents") != "" {
			return apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("ListOptions").GroupKind(), "", field.ErrorList{
				field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"),
			})
		}
	case WatchListIgnored:
		q.Del("sendInitialEvents")
		q.Del("resourceVersionMatch")
	}
	s := q.Get("sendInitialEvents")
	if s == "" {
		return nil
	}
	wr.sendInitial = s == "true"
	if q.Get("resourceVersionMatch") != string(metav1.ResourceVersionMatchNotOlderThan) || !wr.bookmarks {
		return apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("ListOptions").GroupKind(), "", field.ErrorList{
			field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents requires resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true"),
		})
	}
	wr.initial = wr.sendInitial
	return nil
}

// watchStream writes a watch's events, JSON or Table, through a buffer
// that flush sends.
type watchStream struct {
	bw      *bufio.Writer
	flusher http.Flusher
	tf      tableFormat
	res     *resource
}

// newWatchStream starts the 200 response of a watch.
func newWatchStream(w http.ResponseWriter, r *http.Request, res *resource) *watchStream {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	return &watchStream{bw: bufio.NewWriterSize(w, 32<<10), flusher: flusher, tf: tableRequest(r), res: res}
}

// flush sends what was written; false means the client is gone.
func (ws *watchStream) flush() bool {
	if ws.bw.Flush() != nil {
		return false
	}
	if ws.flusher != nil {
		ws.flusher.Flush()
	}
	return true
}

// emit writes one event of o.
func (ws *watchStream) emit(typ store.EventType, o *store.Object) {
	if !ws.tf.on {
		writeEvent(ws.bw, typ, ws.res.objectJSON(o.Data))
		return
	}
	b, err := ws.tf.render(ws.res, []*store.Object{o}, metav1.ListMeta{ResourceVersion: strconv.FormatUint(o.RV, 10)}, true)
	if err != nil {
		b, _ = jsonMarshal(statusOf(err))
		typ = "ERROR"
	}
	writeEvent(ws.bw, typ, b)
}

// streamEvents sends the watcher's events in the watch's selection, and
// bookmarks when asked, until the watch ends.
func (tp *TP) streamEvents(ctx context.Context, ws *watchStream, watcher *store.Watcher, wr *watchRequest, res *resource) {
	var tick <-chan time.Time
	if wr.bookmarks {
		tk := time.NewTicker(tp.bookmarkInterval)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		events, err := watcher.Next(ctx, tick)
		switch {
		case errors.Is(err, store.ErrGone):
			// The window moved past what this stream has sent (a burst
			// larger than the window, or a compaction).
			tp.expiredWatches.Add(1)
			writeEvent(ws.bw, "ERROR", tooOld(watcher.Cursor(), tp.st().WindowStart(res.storeName())))
			ws.flush()
			return
		case err != nil:
			// Closed by the server or the client, or timed out: end the
			// stream cleanly; clients re-watch from their last version.
			ws.flush()
			return
		case events == nil:
			writeBookmark(ws.bw, res, watcher.Cursor(), false)
		}
		for _, e := range events {
			if typ, ok := selectedEvent(e, wr.match); ok {
				ws.emit(typ, e.Object)
			}
		}
		if !ws.flush() {
			return
		}
	}
}

// selectedEvent is what a watch with a selection sees of e: an object
// that enters the selection is ADDED, one that leaves it DELETED, and
// events outside it nothing.
func selectedEvent(e store.Event, match func(*store.Object) bool) (store.EventType, bool) {
	cur := match(e.Object)
	prev := e.Prev != nil && match(e.Prev)
	switch {
	case e.Type == store.Deleted, e.Type == store.Added:
		return e.Type, cur
	case cur && !prev:
		return store.Added, true
	case !cur && prev:
		return store.Deleted, true
	}
	return e.Type, cur
}

// tooOld is the Status of an ERROR event for a watch from a version that
// is no longer in the window, worded as kube-apiserver's watch cache does.
func tooOld(from, windowStart uint64) []byte {
	b, _ := jsonMarshal(statusOf(errGone(fmt.Sprintf("too old resource version: %d (%d)", from, windowStart))))
	return b
}

func writeEvent(w *bufio.Writer, typ store.EventType, object []byte) {
	w.WriteString(`{"type":"`)
	w.WriteString(string(typ))
	w.WriteString(`","object":`)
	w.Write(object)
	w.WriteString("}\n")
}

func writeBookmark(w *bufio.Writer, r *resource, rv uint64, initialEnd bool) {
	ann := ""
	if initialEnd {
		ann = `,"annotations":{"` + initialEventsAnnotation + `":"true"}`
	}
	obj := fmt.Sprintf(`{"kind":"%s","apiVersion":"%s","metadata":{"resourceVersion":"%d"%s}}`, r.kind, r.apiVersion(), rv, ann)
	writeEvent(w, "BOOKMARK", []byte(obj))
}

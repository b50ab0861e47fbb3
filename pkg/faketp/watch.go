package faketp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tpkit-dev/tpkit/pkg/faketp/store"
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
	q := r.URL.Query()
	sel, err := parseSelector(q, t.res)
	if err != nil {
		writeError(w, err)
		return
	}
	if t.kind == targetObject {
		sel.name = t.name
	}
	lo := t.listOptions()
	match := func(o *store.Object) bool {
		if lo.Tenant != "" && o.Tenant != lo.Tenant {
			return false
		}
		if lo.Namespace != "" && o.Namespace != lo.Namespace {
			return false
		}
		return sel.match(o)
	}
	lo.Match = sel.match
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	rvParam := q.Get("resourceVersion")
	initial, sendInitial := rvParam == "" || rvParam == "0", false
	switch tp.opts.WatchList {
	case WatchListRejected:
		if q.Get("sendInitialEvents") != "" {
			writeError(w, apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("ListOptions").GroupKind(), "", field.ErrorList{
				field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"),
			}))
			return
		}
	case WatchListIgnored:
		q.Del("sendInitialEvents")
		q.Del("resourceVersionMatch")
	}
	if s := q.Get("sendInitialEvents"); s != "" {
		sendInitial = s == "true"
		if q.Get("resourceVersionMatch") != string(metav1.ResourceVersionMatchNotOlderThan) || !bookmarks {
			writeError(w, apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("ListOptions").GroupKind(), "", field.ErrorList{
				field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents requires resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true"),
			}))
			return
		}
		initial = sendInitial
	}
	timeout := maxWatchTimeout
	if ts := q.Get("timeoutSeconds"); ts != "" {
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || n < 0 {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %q", truncate(ts))))
			return
		}
		if d := time.Duration(n) * time.Second; n > 0 && d < timeout {
			timeout = d
		}
	}
	var from uint64
	if rvParam != "" && rvParam != "0" {
		if from, err = strconv.ParseUint(rvParam, 10, 64); err != nil {
			writeError(w, errInvalid(t.res, "", "resourceVersion", rvParam, "must be a resourceVersion this server issued"))
			return
		}
	}
	if !initial && (rvParam == "" || rvParam == "0") {
		// sendInitialEvents=false without a version: from now on.
		from = tp.st().RV()
	}
	var snapshot []*store.Object
	if initial {
		snapshot, from, _ = tp.st().List(t.res.storeName(), lo)
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

	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	tp.metrics.watches.Inc()
	defer tp.metrics.watches.Dec()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	bw := bufio.NewWriterSize(w, 32<<10)
	flush := func() bool {
		if bw.Flush() != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	if gone != nil {
		writeEvent(bw, "ERROR", gone)
		flush()
		return
	}
	tf := tableRequest(r)
	emit := func(typ store.EventType, o *store.Object) {
		if !tf.on {
			writeEvent(bw, typ, t.res.objectJSON(o.Data))
			return
		}
		b, err := tf.render(t.res, []*store.Object{o}, metav1.ListMeta{ResourceVersion: strconv.FormatUint(o.RV, 10)}, true)
		if err != nil {
			b, _ = jsonMarshal(statusOf(err))
			typ = "ERROR"
		}
		writeEvent(bw, typ, b)
	}
	for _, o := range snapshot {
		emit(store.Added, o)
	}
	if sendInitial {
		writeBookmark(bw, t.res, from, true)
	}
	if !flush() {
		return
	}
	var tick <-chan time.Time
	if bookmarks {
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
			writeEvent(bw, "ERROR", tooOld(watcher.Cursor(), tp.st().WindowStart(t.res.storeName())))
			flush()
			return
		case err != nil:
			// Closed by the server or the client, or timed out: end the
			// stream cleanly; clients re-watch from their last version.
			flush()
			return
		case events == nil:
			writeBookmark(bw, t.res, watcher.Cursor(), false)
		}
		for _, e := range events {
			cur := match(e.Object)
			prev := e.Prev != nil && match(e.Prev)
			typ := e.Type
			switch {
			case e.Type == store.Deleted:
				if !cur {
					continue
				}
			case e.Type == store.Added:
				if !cur {
					continue
				}
			case cur && !prev:
				typ = store.Added
			case !cur && prev:
				typ = store.Deleted
			case !cur:
				continue
			}
			emit(typ, e.Object)
		}
		if !flush() {
			return
		}
	}
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

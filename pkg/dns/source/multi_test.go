package source

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
)

// TestMultiListWatchResumesEachSub reads the services of two namespaces
// of a fake TP as one. Each sub-watch starts from what it has delivered,
// not from the resourceVersion the caller hands back: a caller that saw
// default's c last would, with c's version, miss web's older b.
func TestMultiListWatchResumesEachSub(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{})
	tp := c.TPs()[0]
	cs, err := partitiontest.NewClients(tenancyk8s.WrapConfig(tp.RESTConfig()), nil)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := informer.NewClients(tenancyk8s.WrapConfig(tp.RESTConfig()), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{"web", "other"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(ns, name string) string {
		t.Helper()
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		out, err := cs.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out.ResourceVersion
	}
	create("other", "never")
	create("web", "listed-1")
	create("web", "listed-2")

	var lws []listWatcher
	for _, ns := range []string{"default", "web"} {
		lw, err := informer.NewListWatch(lc, informer.Services, informer.Scope{FieldSelector: "metadata.namespace=" + ns})
		if err != nil {
			t.Fatal(err)
		}
		lws = append(lws, lw)
	}
	m := merge(lws)

	// A page's continue token cannot span sub-lists: each is whole.
	list, err := m.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	// default holds the TP's master service, kubernetes.
	if got := names(t, list); !slices.Equal(got, []string{"kubernetes", "listed-1", "listed-2"}) {
		t.Fatalf("listed %v, want default's kubernetes and web's two services", got)
	}

	create("default", "a")
	create("web", "b")
	rvC := create("default", "c")
	w, err := m.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rvC})
	if err != nil {
		t.Fatal(err)
	}
	create("default", "z-default")
	create("web", "z-web")
	if got := receive(t, w, "z-default", "z-web"); !slices.Equal(got, []string{"a", "b", "c", "z-default", "z-web"}) {
		t.Fatalf("first watch: %v, want a, b, c and the two marks", got)
	}
	w.Stop()
	if _, open := <-w.ResultChan(); open {
		t.Fatal("the merged watch is open after Stop")
	}

	// Watched again, each sub resumes after what it delivered: no replays.
	create("web", "d")
	create("default", "e")
	if w, err = m.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rvC}); err != nil {
		t.Fatal(err)
	}
	create("default", "y-default")
	create("web", "y-web")
	if got := receive(t, w, "y-default", "y-web"); !slices.Equal(got, []string{"d", "e", "y-default", "y-web"}) {
		t.Fatalf("second watch: %v, want d, e and the two marks", got)
	}

	// The TP ending one watch ends the merged one.
	tp.CloseWatches()
	for range w.ResultChan() {
	}
	w.Stop()
}

func names(t *testing.T, list any) []string {
	t.Helper()
	objs, err := meta.ExtractList(list.(*corev1.ServiceList))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.(*corev1.Service).Name)
	}
	return out
}

// receive returns the names of w's events up to the marks, one created in
// each sub's namespace after w started: a sub's older events come before
// its mark. Sorted.
func receive(t *testing.T, w watch.Interface, marks ...string) []string {
	t.Helper()
	var out []string
	deadline := time.After(2 * time.Minute)
	for seen := 0; seen < len(marks); {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v", out)
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			name := ev.Object.(*corev1.Service).Name
			out = append(out, name)
			if slices.Contains(marks, name) {
				seen++
			}
		case <-deadline:
			t.Fatalf("no event after %v", out)
		}
	}
	slices.Sort(out)
	return out
}

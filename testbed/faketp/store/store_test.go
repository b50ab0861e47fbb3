package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func enc(name string) Encode {
	return func(rv uint64) ([]byte, error) {
		return []byte(fmt.Sprintf(`{"name":%q,"rv":"%d"}`, name, rv)), nil
	}
}

func key(tenant, ns, name string) Key {
	return Key{Resource: "pods", Tenant: tenant, Namespace: ns, Name: name}
}

func index(k Key, b []byte) (Meta, error) { return Meta{Labels: map[string]string{"n": k.Name}}, nil }

func mustOpen(t *testing.T, o Options) *Store {
	t.Helper()
	if o.Path != "" {
		o.Index = index
	}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestCRUDAndVersions(t *testing.T) {
	s := mustOpen(t, Options{})
	a, err := s.Create(key("t", "ns", "a"), Meta{}, enc("a"))
	if err != nil || a.RV != 1 || string(a.Data) != `{"name":"a","rv":"1"}` {
		t.Fatalf("create: %v %+v", err, a)
	}
	if _, err := s.Create(key("t", "ns", "a"), Meta{}, enc("a")); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := s.Update(key("t", "ns", "a"), 7, Meta{}, enc("a")); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale update: %v", err)
	}
	u, err := s.Update(key("t", "ns", "a"), 1, Meta{}, enc("a"))
	if err != nil || u.RV != 2 {
		t.Fatalf("update: %v %+v", err, u)
	}
	if _, err := s.Update(key("t", "ns", "zz"), 0, Meta{}, enc("zz")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
	d, err := s.Delete(key("t", "ns", "a"), 0, enc("a"))
	if err != nil || d.RV != 3 {
		t.Fatalf("delete: %v %+v", err, d)
	}
	if _, ok := s.Get(key("t", "ns", "a")); ok {
		t.Fatal("deleted object still there")
	}
	if s.RV() != 3 {
		t.Fatalf("RV %d", s.RV())
	}
	// A failed encode changes nothing.
	if _, err := s.Create(key("t", "ns", "b"), Meta{}, func(uint64) ([]byte, error) { return nil, errors.New("boom") }); err == nil || s.RV() != 3 {
		t.Fatalf("failed encode: %v, RV %d", err, s.RV())
	}
}

func TestListOrderScopeAndPaging(t *testing.T) {
	s := mustOpen(t, Options{})
	var puts []Put
	for _, k := range []Key{key("b", "x", "1"), key("a", "y", "2"), key("a", "x", "3"), key("a", "x", "1"), key("c", "x", "1")} {
		puts = append(puts, Put{Key: k, Encode: enc(k.Name)})
	}
	puts = append(puts, Put{Key: Key{Resource: "services", Tenant: "a", Namespace: "x", Name: "s"}, Encode: enc("s")})
	if err := s.Load(puts); err != nil {
		t.Fatal(err)
	}
	names := func(objs []*Object) (out []string) {
		for _, o := range objs {
			out = append(out, o.Tenant+"/"+o.Namespace+"/"+o.Name)
		}
		return
	}
	cases := []struct {
		o    ListOptions
		want string
		more bool
	}{
		{ListOptions{}, "[a/x/1 a/x/3 a/y/2 b/x/1 c/x/1]", false},
		{ListOptions{Tenant: "a"}, "[a/x/1 a/x/3 a/y/2]", false},
		{ListOptions{Tenant: "a", Namespace: "x"}, "[a/x/1 a/x/3]", false},
		{ListOptions{Namespace: "x"}, "[a/x/1 a/x/3 b/x/1 c/x/1]", false},
		{ListOptions{Limit: 2}, "[a/x/1 a/x/3]", true},
		{ListOptions{Limit: 2, After: &Key{Tenant: "a", Namespace: "x", Name: "3"}}, "[a/y/2 b/x/1]", true},
		{ListOptions{Limit: 2, After: &Key{Tenant: "b", Namespace: "x", Name: "1"}}, "[c/x/1]", false},
		{ListOptions{Match: func(o *Object) bool { return o.Name == "1" }}, "[a/x/1 b/x/1 c/x/1]", false},
		{ListOptions{Tenant: "zzz"}, "[]", false},
	}
	for i, tc := range cases {
		objs, rv, more := s.List("pods", tc.o)
		if got := fmt.Sprint(names(objs)); got != tc.want || more != tc.more || rv != 6 {
			t.Errorf("case %d: %s more=%v rv=%d, want %s more=%v", i, got, more, rv, tc.want, tc.more)
		}
	}
	// Lists handed out do not change when the store does.
	before, _, _ := s.List("pods", ListOptions{})
	if _, err := s.Update(key("a", "x", "1"), 0, Meta{}, enc("changed")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(key("a", "a", "0"), Meta{}, enc("new")); err != nil {
		t.Fatal(err)
	}
	if string(before[0].Data) != `{"name":"1","rv":"4"}` || len(before) != 5 {
		t.Fatalf("a list changed under its reader: %s, %d", before[0].Data, len(before))
	}
	after, _, _ := s.List("pods", ListOptions{})
	if len(after) != 6 || after[0].Name != "0" || string(after[1].Data) != `{"name":"changed","rv":"7"}` {
		t.Fatalf("list after changes: %v", names(after))
	}
}

func next(t *testing.T, w *Watcher) ([]Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return w.Next(ctx, nil)
}

func TestWatchResumeGoneAndClose(t *testing.T) {
	s := mustOpen(t, Options{History: 4})
	w, err := s.Watch("pods", 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Create(key("t", "n", "a"), Meta{}, enc("a"))
	s.Create(Key{Resource: "services", Tenant: "t", Namespace: "n", Name: "s"}, Meta{}, enc("s"))
	s.Update(key("t", "n", "a"), 0, Meta{}, enc("a"))
	evs, err := next(t, w)
	if err != nil || len(evs) != 2 || evs[0].Type != Added || evs[1].Type != Modified || evs[1].Prev.RV != 1 || w.Cursor() != 3 {
		t.Fatalf("events: %v %+v cursor %d", err, evs, w.Cursor())
	}
	// A watch from any version still in the history replays from there.
	w2, err := s.Watch("pods", 1)
	if err != nil {
		t.Fatal(err)
	}
	if evs, _ := next(t, w2); len(evs) != 1 || evs[0].Object.RV != 3 {
		t.Fatalf("resume from 1: %+v", evs)
	}
	// Overflowing the history makes old versions gone, for new watches
	// and for a watcher that fell behind.
	for i := 0; i < 5; i++ {
		s.Update(key("t", "n", "a"), 0, Meta{}, enc("a"))
	}
	if _, err := s.Watch("pods", 1); !errors.Is(err, ErrGone) {
		t.Fatalf("watch from an overwritten version: %v", err)
	}
	if _, err := next(t, w); !errors.Is(err, ErrGone) {
		t.Fatalf("a watcher that fell behind: %v", err)
	}
	if _, err := s.Watch("pods", s.RV()+1); !errors.Is(err, ErrTooNew) {
		t.Fatalf("watch from the future: %v", err)
	}
	// Compaction while a watcher has unread events.
	w3, _ := s.Watch("pods", s.RV())
	s.Create(key("t", "n", "b"), Meta{}, enc("b"))
	s.Compact()
	if _, err := next(t, w3); !errors.Is(err, ErrGone) {
		t.Fatalf("after compaction: %v", err)
	}
	if _, err := s.Watch("pods", s.RV()-1); !errors.Is(err, ErrGone) {
		t.Fatalf("watch from before compaction: %v", err)
	}
	// CloseWatches ends open watchers; new ones work.
	w4, _ := s.Watch("pods", s.RV())
	done := make(chan error)
	go func() { _, err := next(t, w4); done <- err }()
	s.CloseWatches()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("closed watcher: %v", err)
	}
	// A watch closed with unread events returns them first, then ends;
	// what comes after the close is not its.
	w6, _ := s.Watch("pods", s.RV())
	s.Create(key("t", "n", "c"), Meta{}, enc("c"))
	s.CloseWatches()
	s.Create(key("t", "n", "d"), Meta{}, enc("d"))
	if evs, err := next(t, w6); err != nil || len(evs) != 1 || evs[0].Object.Name != "c" {
		t.Fatalf("closed watcher with an unread event: %v %+v", err, evs)
	}
	if _, err := next(t, w6); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed watcher after its last event: %v", err)
	}
	w5, err := s.Watch("pods", s.RV())
	if err != nil {
		t.Fatal(err)
	}
	s.Delete(key("t", "n", "b"), 0, enc("b"))
	if evs, err := next(t, w5); err != nil || len(evs) != 1 || evs[0].Type != Deleted || evs[0].Prev == nil {
		t.Fatalf("after CloseWatches: %v %+v", err, evs)
	}
	// A tick with nothing new returns no events.
	tick := make(chan time.Time, 1)
	tick <- time.Now()
	if evs, err := w5.Next(context.Background(), tick); evs != nil || err != nil {
		t.Fatalf("tick: %v %v", evs, err)
	}
}

func TestWatchWindowsArePerResource(t *testing.T) {
	s := mustOpen(t, Options{History: 3})
	svc := func(name string) Key { return Key{Resource: "services", Tenant: "t", Namespace: "n", Name: name} }
	s.Create(svc("s"), Meta{}, enc("s")) // 1
	// Fewer events than the window holds: it reaches back to the opening.
	if got := s.WindowStart("pods"); got != 0 {
		t.Fatalf("window of a resource without events starts at %d", got)
	}
	for i := 0; i < 5; i++ { // pods 2..6
		s.Create(key("t", "n", strconv.Itoa(i)), Meta{}, enc("p"))
	}
	// Five pod events overflow a window of three; the service's is intact.
	if got := s.WindowStart("pods"); got != 3 {
		t.Fatalf("pods window starts at %d, want 3 (the last dropped event)", got)
	}
	if _, err := s.Watch("pods", 2); !errors.Is(err, ErrGone) {
		t.Fatalf("pods from 2: %v", err)
	}
	w, err := s.Watch("pods", 3)
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := next(t, w); err != nil || len(evs) != 3 || evs[0].Object.RV != 4 {
		t.Fatalf("pods from 3: %v %+v", err, evs)
	}
	ws, err := s.Watch("services", 0)
	if err != nil {
		t.Fatalf("services from 0 after many pod events: %v", err)
	}
	if evs, err := next(t, ws); err != nil || len(evs) != 1 || evs[0].Object.Name != "s" {
		t.Fatalf("services from 0: %v %+v", err, evs)
	}
}

func TestListAt(t *testing.T) {
	s := mustOpen(t, Options{Revisions: 8})
	s.Create(key("t", "n", "a"), Meta{}, enc("a"))                                                // 1
	s.Create(key("t", "n", "b"), Meta{}, enc("b"))                                                // 2
	s.Create(Key{Resource: "services", Tenant: "t", Namespace: "n", Name: "s"}, Meta{}, enc("s")) // 3
	s.Update(key("t", "n", "a"), 0, Meta{}, enc("a"))                                             // 4
	s.Delete(key("t", "n", "b"), 0, enc("b"))                                                     // 5
	s.Create(key("t", "n", "c"), Meta{}, enc("c"))                                                // 6
	at := func(rv uint64, o ListOptions) string {
		objs, more, err := s.ListAt("pods", rv, o)
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, o := range objs {
			out = append(out, fmt.Sprintf("%s@%d", o.Name, o.RV))
		}
		return fmt.Sprint(out, more)
	}
	for _, tc := range []struct {
		rv   uint64
		o    ListOptions
		want string
	}{
		{0, ListOptions{}, "[] false"},
		{1, ListOptions{}, "[a@1] false"},
		{3, ListOptions{}, "[a@1 b@2] false"},
		{4, ListOptions{}, "[a@4 b@2] false"},
		{5, ListOptions{}, "[a@4] false"},
		{6, ListOptions{}, "[a@4 c@6] false"},
		{3, ListOptions{Limit: 1}, "[a@1] true"},
		{3, ListOptions{Limit: 1, After: &Key{Tenant: "t", Namespace: "n", Name: "a"}}, "[b@2] false"},
		{7, ListOptions{}, ErrTooNew.Error()},
	} {
		if got := at(tc.rv, tc.o); got != tc.want {
			t.Errorf("at %d %+v: %s, want %s", tc.rv, tc.o, got, tc.want)
		}
	}
	// The log holds eight changes: older versions are compacted.
	for i := 0; i < 4; i++ {
		s.Update(key("t", "n", "c"), 0, Meta{}, enc("c")) // 7..10
	}
	if s.Compacted() != 2 || at(1, ListOptions{}) != ErrGone.Error() || at(2, ListOptions{}) != "[a@1 b@2] false" {
		t.Fatalf("after the log overflowed: compacted %d, at 1 %s, at 2 %s", s.Compacted(), at(1, ListOptions{}), at(2, ListOptions{}))
	}
	s.Compact()
	if at(9, ListOptions{}) != ErrGone.Error() || at(10, ListOptions{}) != "[a@4 c@10] false" {
		t.Fatalf("after Compact: %s, %s", at(9, ListOptions{}), at(10, ListOptions{}))
	}
}

func TestPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tp.db")
	s, err := Open(Options{Path: path, Index: index})
	if err != nil {
		t.Fatal(err)
	}
	s.Create(key("t", "n", "a"), Meta{}, enc("a"))
	s.Create(key("t", "n", "b"), Meta{}, enc("b"))
	s.Delete(key("t", "n", "b"), 0, enc("b"))
	if err := s.Load([]Put{{Key: key("t", "n", "c"), Encode: enc("c")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := mustOpen(t, Options{Path: path})
	if s2.RV() != 4 {
		t.Fatalf("RV after reopen: %d", s2.RV())
	}
	objs, _, _ := s2.List("pods", ListOptions{})
	if len(objs) != 2 || objs[0].Name != "a" || objs[0].RV != 1 || objs[1].Name != "c" || objs[1].RV != 4 || objs[0].Labels["n"] != "a" {
		t.Fatalf("objects after reopen: %+v", objs)
	}
	// The history did not survive: older versions are gone, the current one is fine.
	if _, err := s2.Watch("pods", 1); !errors.Is(err, ErrGone) {
		t.Fatalf("watch from before the restart: %v", err)
	}
	if _, err := s2.Watch("pods", 4); err != nil {
		t.Fatal(err)
	}
	if o, _ := s2.Create(key("t", "n", "d"), Meta{}, enc("d")); o.RV != 5 {
		t.Fatalf("counter after reopen: %d", o.RV)
	}
	// A file with a record it cannot index is refused, not half-loaded.
	s2.Close()
	_, err = Open(Options{Path: path, Index: func(Key, []byte) (Meta, error) { return Meta{}, errors.New("bad") }})
	if err == nil {
		t.Fatal("a bad record was accepted")
	}
}

func BenchmarkList10k(b *testing.B) {
	s, _ := Open(Options{})
	var puts []Put
	for i := 0; i < 10000; i++ {
		puts = append(puts, Put{Key: key("t", "n"+strconv.Itoa(i%100), strconv.Itoa(i)), Encode: enc("x")})
	}
	if err := s.Load(puts); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if objs, _, _ := s.List("pods", ListOptions{}); len(objs) != 10000 {
			b.Fatal(len(objs))
		}
	}
}

func TestFields(t *testing.T) {
	m := map[string]string{"spec.nodeName": "node-1", "status.phase": "Running", "a": "", "spec.x": "v"}
	f := MakeFields(m)
	for k, want := range map[string]string{"spec.nodeName": "node-1", "status.phase": "Running", "a": "", "spec.x": "v", "spec": "", "node-1": "", "": ""} {
		if got := f.Get(k); got != want {
			t.Errorf("Get(%q) = %q, want %q", k, got, want)
		}
	}
	if got := f.Map(); len(got) != 3 || got["spec.x"] != "v" || got["status.phase"] != "Running" {
		t.Errorf("Map() = %v", got)
	}
	if MakeFields(nil) != "" || MakeFields(map[string]string{"a": ""}) != "" || Fields("").Get("a") != "" || Fields("").Map() != nil {
		t.Error("empty fields")
	}
}

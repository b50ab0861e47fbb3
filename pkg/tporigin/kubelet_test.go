package tporigin

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

func TestSourcePartition(t *testing.T) {
	for _, c := range []struct {
		source string
		tp     int
		ok     bool
	}{
		{"api0", 0, true},
		{"api1", 1, true},
		{"api12", 12, true},
		{"api", 0, false}, // Arktos's checkpoint restore, not a TP
		{"api-1", 0, false},
		{"api01", 0, false},
		{"api+1", 0, false},
		{"apix", 0, false},
		{"file", 0, false},
		{"http", 0, false},
		{"", 0, false},
	} {
		tp, ok := SourcePartition(c.source)
		if tp != c.tp || ok != c.ok {
			t.Errorf("SourcePartition(%q) = %d, %v; want %d, %v", c.source, tp, ok, c.tp, c.ok)
		}
	}
}

func TestClientChooser(t *testing.T) {
	tr := mustOpen(t, Options{Partitions: []string{"tp-a", "tp-b"}})
	c := NewClientChooser(tr)
	pod := PodRef{UID: "u1", Tenant: "system", Namespace: "kube-system", Name: "ds-x"}

	if _, err := c.PickClient("u1"); !errors.Is(err, ErrUnknownPod) {
		t.Fatalf("PickClient before any record = %v, want ErrUnknownPod", err)
	}
	for _, tp := range []int{-1, 2} {
		if _, err := c.Record(pod, tp); !errors.Is(err, ErrUnknownPartition) || !strings.Contains(err.Error(), "ds-x") {
			t.Errorf("Record(client %d) = %v, want ErrUnknownPartition naming the pod", tp, err)
		}
	}
	if r, err := c.Record(pod, 1); err != nil || r != Recorded {
		t.Fatalf("Record = %v, %v", r, err)
	}
	// The same UID from the other source keeps its first origin.
	if r, err := c.Record(pod, 0); err != nil || r != Conflict {
		t.Fatalf("Record from a second source = %v, %v; want Conflict", r, err)
	}
	if tp, err := c.PickClient("u1"); err != nil || tp != 1 {
		t.Fatalf("PickClient = %d, %v; want 1", tp, err)
	}
	if o, _ := tr.Origin("u1"); o != (Origin{Partition: "tp-b", Kind: KindPod, Tenant: "system"}) {
		t.Fatalf("Origin = %+v", o)
	}
	if got, err := c.PickClientOf("u1", 2); err != nil || got != 1 {
		t.Fatalf("PickClientOf = %d, %v", got, err)
	}
	if _, err := c.PickClientOf("u1", 1); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("PickClientOf with too few clients = %v, want ErrUnknownPartition", err)
	}
	if got, err := c.PickClientOf("u2", 2); !errors.Is(err, ErrUnknownPod) || got != -1 {
		t.Fatalf("PickClientOf(unknown) = %d, %v; want -1 and ErrUnknownPod", got, err)
	}

	// A removal by the source that is not the origin: tp-b's report stays,
	// tp-a's conflict is cleared.
	if removed, err := c.Forget(pod, 0); err != nil || removed {
		t.Fatalf("Forget from the other source = %v, %v", removed, err)
	}
	if removed, err := c.Forget(pod, 1); err != nil || !removed {
		t.Fatalf("Forget from the origin = %v, %v", removed, err)
	}
	if _, err := c.PickClient("u1"); !errors.Is(err, ErrUnknownPod) {
		t.Fatalf("PickClient after Forget = %v, want ErrUnknownPod", err)
	}
	if _, err := c.Forget(pod, 5); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("Forget(client 5) = %v", err)
	}

	// An origin from a TP this node has no client for (a file written under
	// another configuration): never a client index.
	observe(t, tr, "old", "tp-old", "", KindPod)
	if tp, err := c.PickClient("old"); !errors.Is(err, ErrUnknownPartition) || tp != -1 {
		t.Fatalf("PickClient(origin tp-old) = %d, %v; want ErrUnknownPartition", tp, err)
	}
}

func TestObjectKey(t *testing.T) {
	tr := mustOpen(t, Options{Partitions: []string{"tp-a", "tp-b"}, StaticTenants: map[string]string{"fixed": "tp-a"}})
	c := NewClientChooser(tr)
	observe(t, tr, "sys-b", "tp-b", "system", KindPod)
	observe(t, tr, "acme-svc", "tp-b", "acme", KindService) // acme lives in tp-b
	observe(t, tr, "old", "tp-old", "", KindPod)

	for _, tc := range []struct {
		tenant, ns, name, uid string
		want                  ObjectKey
		err                   error
	}{
		{"", "kube-system", "cfg", "sys-b", ObjectKey{Key: key("tp-b", "system", "kube-system", "cfg"), Client: 1}, nil},
		{"system", "kube-system", "cfg", "sys-b", ObjectKey{Key: key("tp-b", "system", "kube-system", "cfg"), Client: 1}, nil},
		{"acme", "default", "app", "acme-pod", ObjectKey{Key: key("tp-b", "acme", "default", "app"), Client: 1}, nil},
		{"fixed", "default", "app", "fixed-pod", ObjectKey{Key: key("tp-a", "fixed", "default", "app"), Client: 0}, nil},
		{"system", "kube-system", "cfg", "static", ObjectKey{}, ErrUnknownPod},
		{"nobody", "default", "app", "p", ObjectKey{}, ErrUnknownPod},
		{"", "kube-system", "cfg", "old", ObjectKey{}, ErrUnknownPartition},
	} {
		got, err := c.ObjectKey(tc.tenant, tc.ns, tc.name, tc.uid)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("ObjectKey(%q, %q, %q, %q) = %+v, %v; want %+v, %v", tc.tenant, tc.ns, tc.name, tc.uid, got, err, tc.want, tc.err)
		}
	}
	for _, bad := range [][2]string{{"kube-system", ""}, {"kube-system", "a/b"}, {"a/b", "cfg"}} {
		if _, err := c.ObjectKey("", bad[0], bad[1], "sys-b"); err == nil {
			t.Errorf("ObjectKey(namespace %q, name %q) accepted", bad[0], bad[1])
		}
	}
	if _, err := c.ObjectKey("Bad_Tenant", "ns", "cfg", "sys-b"); err == nil {
		t.Error("ObjectKey accepted a tenant that is not a DNS label")
	}
}

func key(tp, tenant, ns, name string) (k tenancy.Key) {
	k.Partition, k.Tenant, k.Namespace, k.Name = tp, tenant, ns, name
	return k
}

// TestPickClientDuringRecords: pod sources record while other goroutines
// pick clients; a recorded pod is never answered with another client.
func TestPickClientDuringRecords(t *testing.T) {
	tr := mustOpen(t, Options{Partitions: []string{"tp-a", "tp-b", "tp-c"}})
	c := NewClientChooser(tr)
	const n = 3000
	var wg sync.WaitGroup
	for src := 0; src < 3; src++ {
		wg.Add(1)
		go func(src int) {
			defer wg.Done()
			for i := src; i < n; i += 3 {
				if _, err := c.Record(PodRef{UID: uid(i), Tenant: "system"}, src); err != nil {
					t.Error(err)
					return
				}
			}
		}(src)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for round := 0; round < 3; round++ {
			for i := 0; i < n; i++ {
				tp, err := c.PickClient(uid(i))
				if err == nil && tp != i%3 || err != nil && !errors.Is(err, ErrUnknownPod) {
					t.Errorf("PickClient(%d) = %d, %v", i, tp, err)
					return
				}
			}
		}
	}()
	wg.Wait()
	for i := 0; i < n; i++ {
		if tp, err := c.PickClient(uid(i)); err != nil || tp != i%3 {
			t.Fatalf("PickClient(%d) = %d, %v after every record", i, tp, err)
		}
	}
}

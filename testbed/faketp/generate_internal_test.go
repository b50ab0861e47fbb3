package faketp

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// TestGenerateAsSeeded: Generate's objects (from templates, the Endpoints
// as the controller would write them) are what seeding the same objects
// stores, the controllers writing the Endpoints: the same keys, the same
// JSON and the same index, but for what differs per write (uids, hash
// keys, times, resourceVersions).
func TestGenerateAsSeeded(t *testing.T) {
	for _, tc := range []struct {
		name        string
		controllers []string
		o           GenerateOptions
	}{
		{"controllers", nil, GenerateOptions{Namespaces: 3, Pods: 40, Services: 7, ConfigMaps: 5, Nodes: 4}},
		{"regular tenant", nil, GenerateOptions{Tenant: "acme", Namespaces: 2, Pods: 30, Services: 4, ConfigMaps: 2}},
		{"no endpoints controller", []string{TenantController}, Scaled(300)},
		{"scaled", nil, Scaled(1000)}, // addresses whose order as strings is not their order as numbers
		{"no namespaces", nil, GenerateOptions{Pods: 5, Services: 2}},
		// A tenant whose name holds the first marks: the templates take others.
		{"tenant like a marker", nil, GenerateOptions{Tenant: "q9qnq9q", Namespaces: 2, Pods: 20, Services: 2, ConfigMaps: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Two clusters: the TPs allocate cluster IPs from the same range.
			gen := StartT(t, Options{Controllers: tc.controllers}).TPs()[0]
			seeded := StartT(t, Options{Controllers: tc.controllers}).TPs()[0]
			if err := gen.Generate(tc.o); err != nil {
				t.Fatal(err)
			}
			seedAsGenerateDid(t, seeded, tc.o)
			checkTargetRefs(t, gen)
			for _, r := range []string{"tenants", "namespaces", "pods", "services", "endpoints", "configmaps"} {
				a, b := snapshot(t, gen, r), snapshot(t, seeded, r)
				if !slices.Equal(slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))) {
					t.Fatalf("%s: generated %v, seeded %v", r, slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b)))
				}
				for k, ga := range a {
					if gb := b[k]; ga.json != gb.json || !reflect.DeepEqual(ga.meta, gb.meta) {
						t.Errorf("%s:\n generated %s %+v\n    seeded %s %+v", k, ga.json, ga.meta, gb.json, gb.meta)
					}
				}
			}
		})
	}
}

// seedAsGenerateDid seeds what Generate made before it had templates: its
// objects, through seedObjects, with the controllers' rounds.
func seedAsGenerateDid(t *testing.T, tp *TP, o GenerateOptions) {
	tenant := o.Tenant
	if tenant == "" {
		tenant = "system"
	}
	g := &generator{tp: tp, tenant: tenant, nsCount: max(o.Namespaces, 1), nodes: o.Nodes, svcCount: max(o.Services, 1), pods: o.Pods}
	if g.nodes <= 0 {
		g.nodes = 10
	}
	var objs []obj
	for i := 0; i < g.nsCount && o.Namespaces > 0; i++ {
		objs = append(objs, obj{"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": g.ns(i), "tenant": tenant}})
	}
	for i := 0; i < o.Pods; i++ {
		objs = append(objs, g.podObject(fmt.Sprintf("pod-%d", i), g.ns(i), fmt.Sprintf("svc-%d", i%g.svcCount), fmt.Sprintf("node-%d", i%g.nodes), podIP(i)))
	}
	if err := tp.seedObjects(objs); err != nil {
		t.Fatal(err)
	}
	objs = nil
	for i := 0; i < o.Services; i++ {
		objs = append(objs, g.serviceObject(fmt.Sprintf("svc-%d", i), g.ns(i), fmt.Sprintf("svc-%d", i)))
	}
	if err := tp.seedObjects(objs); err != nil {
		t.Fatal(err)
	}
	objs = nil
	for i := 0; i < o.Services && !tp.runs(EndpointsController); i++ {
		objs = append(objs, g.endpoints(i))
	}
	for i := 0; i < o.ConfigMaps; i++ {
		objs = append(objs, g.configMapObject(fmt.Sprintf("cm-%d", i), g.ns(i), fmt.Sprintf("value-%d", i)))
	}
	if err := tp.seedObjects(objs); err != nil {
		t.Fatal(err)
	}
}

type stored struct {
	json string
	meta store.Meta
}

// perWrite are the values that differ from one write to the next.
var perWrite = regexp.MustCompile(`"(uid|creationTimestamp|resourceVersion|endpoints.kubernetes.io/last-change-trigger-time)":"[^"]*"|"hashKey":[0-9]+`)

func snapshot(t *testing.T, tp *TP, resource string) map[string]stored {
	objs, _, _ := tp.Store().List(resource, store.ListOptions{})
	out := map[string]stored{}
	for _, o := range objs {
		if o.Namespace == "default" && o.Name == "kubernetes" {
			continue // the master service: each TP's own port
		}
		var v any
		if err := json.Unmarshal(o.Data, &v); err != nil {
			t.Fatalf("%s: %v", o.Key, err)
		}
		out[o.Key.String()] = stored{json: perWrite.ReplaceAllString(string(o.Data), `"$1":…`), meta: o.Meta}
	}
	return out
}

// checkTargetRefs: every Endpoints address's targetRef names its pod's uid
// and resourceVersion, as the endpoints controller writes them.
func checkTargetRefs(t *testing.T, tp *TP) {
	eps, _, _ := tp.Store().List("endpoints", store.ListOptions{})
	for _, e := range eps {
		var ep struct {
			Subsets []struct {
				Addresses []struct {
					TargetRef struct{ Name, Namespace, Tenant, UID, ResourceVersion string }
				}
			}
		}
		if err := json.Unmarshal(e.Data, &ep); err != nil {
			t.Fatal(err)
		}
		for _, s := range ep.Subsets {
			for _, a := range s.Addresses {
				r := a.TargetRef
				if r.UID == "" && r.ResourceVersion == "" {
					continue // written as a client would: names only
				}
				pod, ok := tp.Store().Get(store.Key{Resource: "pods", Tenant: r.Tenant, Namespace: r.Namespace, Name: r.Name})
				var p struct {
					Metadata struct{ UID, ResourceVersion string }
				}
				if !ok || json.Unmarshal(pod.Data, &p) != nil || p.Metadata.UID != r.UID || p.Metadata.ResourceVersion != r.ResourceVersion {
					t.Errorf("%s: targetRef %+v, pod %+v", e.Key, r, p.Metadata)
				}
			}
		}
	}
}

func TestMarks(t *testing.T) {
	m := marks("q9q")
	for _, tc := range []struct {
		s    string
		i    int
		slot byte
	}{
		{"abc", -1, 0}, {"q9qnq9q", 0, 'n'}, {"xq9q-q9qnq9q", 5, 'n'}, {"q9q", -1, 0}, {"q9qnq9", -1, 0}, {"/q9qsq9q/q9qnq9q", 1, 's'},
	} {
		if i, c := m.next(tc.s); i != tc.i || c != tc.slot {
			t.Errorf("next(%q) = %d %q, want %d %q", tc.s, i, c, tc.i, tc.slot)
		}
	}
	if got := chooseMarks("system"); got != "q9q" {
		t.Errorf("chooseMarks(system) = %q", got)
	}
	if got := chooseMarks("aq9qbq10q"); got != "q11q" {
		t.Errorf("chooseMarks(aq9qbq10q) = %q", got)
	}
	v := &slotValues{name: "pod-1", namespace: "gen-0"}
	if got := m.fillString("/ns/q9qsq9q/pods/q9qnq9q", v, nil); got != "/ns/gen-0/pods/pod-1" {
		t.Errorf("fillString = %q", got)
	}
	var a stringArena
	x, y := a.concat("pod-", 12), m.fillString("q9qnq9q.q9qsq9q", v, &a)
	if z := a.concat("cm-", 0); x != "pod-12" || y != "pod-1.gen-0" || z != "cm-0" {
		t.Errorf("in the arena: %q %q %q", x, y, z)
	}
}

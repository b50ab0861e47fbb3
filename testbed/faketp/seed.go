package faketp

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/testbed/faketp/manifest"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// Seed stores objects the way a restore would: in one commit, without
// admission, keeping their status (pods keep their IPs and phase). An
// existing object with the same key is replaced. Seeding is never refused
// for a missing tenant or namespace: they are created (a Tenant with
// spec.storageClusterId "0"), so the TP stays consistent.
//
// Objects may be typed k8s.io/api values (apiVersion and kind may be left
// empty), *unstructured.Unstructured, or map[string]any. The tenant is
// metadata.tenant, else the tenancy.TenantAnnotation (which is removed),
// else system; a namespaced object without a namespace goes to "default".
func (tp *TP) Seed(objs ...any) error {
	var list []obj
	for i, o := range objs {
		m, err := toObj(o)
		if err != nil {
			return fmt.Errorf("faketp: seeding object %d: %w", i, err)
		}
		list = append(list, m)
	}
	return tp.seedObjects(list)
}

// SeedFiles seeds the objects of manifest files (multi-document YAML or
// JSON).
func (tp *TP) SeedFiles(paths ...string) error {
	objs, err := manifest.ReadFiles(paths...)
	if err != nil {
		return fmt.Errorf("faketp %s: %w", tp.name, err)
	}
	return tp.seedObjects(objs)
}

// SeedDir seeds from dir as fake-tp --seed does: the manifests directly in
// dir go to every TP, those in dir/NAME to the TP called NAME. A TP that
// started from an existing data file (TP.Loaded) is left alone: it holds a
// previous run's state, changes included, which a seed would overwrite.
func (c *Cluster) SeedDir(dir string) error {
	common, err := manifest.Files(dir)
	if err != nil {
		return fmt.Errorf("faketp: seed directory: %w", err)
	}
	for _, tp := range c.tps {
		if tp.Loaded() {
			klog.InfoS("Not seeding a tenant partition that started from its data file", "tp", tp.name, "seed", dir)
			continue
		}
		own, err := manifest.Files(filepath.Join(dir, tp.name))
		if err != nil && !isNotExist(err) {
			return fmt.Errorf("faketp: seed directory: %w", err)
		}
		if err := tp.SeedFiles(append(append([]string(nil), common...), own...)...); err != nil {
			return err
		}
	}
	return nil
}

func toObj(o any) (obj, error) {
	switch v := o.(type) {
	case map[string]any:
		return deepCopy(v), nil
	case *unstructured.Unstructured:
		return roundTrip(v.Object)
	case runtime.Object:
		m, err := roundTrip(v)
		if err != nil {
			return nil, err
		}
		if m["kind"] == nil || m["apiVersion"] == nil {
			gvks, _, err := scheme().ObjectKinds(v)
			if err != nil || len(gvks) == 0 {
				return nil, fmt.Errorf("cannot tell the kind of %T: %v", v, err)
			}
			m["apiVersion"], m["kind"] = gvks[0].GroupVersion().String(), gvks[0].Kind
		}
		return m, nil
	}
	return nil, fmt.Errorf("unsupported object type %T", o)
}

func roundTrip(v any) (obj, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeObject(b)
}

// seedObjects prepares every object as a create would, then loads them all
// in one store commit. Tenants and namespaces that the objects live in but
// that neither exist nor come with them are created first (a tenant with
// storageClusterId "0"), so the TP stays as consistent as Arktos keeps it.
func (tp *TP) seedObjects(objs []obj) error {
	st := tp.st()
	if st == nil {
		return fmt.Errorf("faketp %s: not started", tp.name)
	}
	targets := make([]target, len(objs))
	have := map[store.Key]bool{}
	for i, o := range objs {
		t, err := seedTarget(o)
		if err != nil {
			return fmt.Errorf("faketp %s: object %d: %w", tp.name, i, err)
		}
		if t.res.gvr.Group == discoveryv1.GroupName && !tp.opts.EndpointSlices {
			return fmt.Errorf("faketp %s: object %d: the TP serves no EndpointSlices (as Arktos); Options.EndpointSlices mirrors them from Endpoints", tp.name, i)
		}
		targets[i] = t
		if n := str(o, "metadata", "name"); n != "" && (t.res.gvr.Resource == "tenants" || t.res.gvr.Resource == "namespaces") {
			have[t.key(n)] = true
		}
	}
	var missing []obj
	need := func(k store.Key, o obj) {
		if have[k] {
			return
		}
		have[k] = true
		if _, ok := st.Get(k); !ok {
			missing = append(missing, o)
		}
	}
	for _, t := range targets {
		if t.res.scope == scopeCluster {
			continue
		}
		if !tenancy.IsSystem(t.tenant) {
			need(store.Key{Resource: "tenants", Name: t.tenant}, obj{"apiVersion": "v1", "kind": "Tenant", "metadata": obj{"name": t.tenant}})
		}
		if t.res.scope == scopeNamespace {
			need(store.Key{Resource: "namespaces", Tenant: t.tenant, Name: t.namespace},
				obj{"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": t.namespace, "tenant": t.tenant}})
		}
	}
	puts := make([]store.Put, 0, len(missing)+len(objs))
	for i, o := range append(missing, objs...) {
		var t target
		if i < len(missing) {
			var err error
			if t, err = seedTarget(o); err != nil {
				return fmt.Errorf("faketp %s: %w", tp.name, err)
			}
		} else {
			t = targets[i-len(missing)]
		}
		k, _, err := tp.prepareCreate(t, o, writeOptions{seed: true})
		if err != nil {
			return fmt.Errorf("faketp %s: object %d (%s %s): %w", tp.name, i-len(missing), t.res.kind, str(o, "metadata", "name"), err)
		}
		puts = append(puts, store.Put{Key: k, Meta: t.res.index(o), Encode: encoder(o)})
	}
	if err := st.Load(puts); err != nil {
		return err
	}
	keys := make([]store.Key, len(puts))
	for i, p := range puts {
		keys[i] = p.Key
	}
	tp.changed(keys...)
	return nil
}

// seedTarget is the target a manifest object is created under.
func seedTarget(o obj) (target, error) {
	av, _ := o["apiVersion"].(string)
	kind, _ := o["kind"].(string)
	gv, err := schema.ParseGroupVersion(av)
	if err != nil {
		return target{}, err
	}
	r := lookupKind(gv.WithKind(kind))
	if r == nil {
		return target{}, fmt.Errorf("fake-tp does not serve %s %s", av, kind)
	}
	md, err := metadata(o)
	if err != nil {
		return target{}, err
	}
	t := target{kind: targetCollection, gv: gv, res: r}
	if r.scope == scopeCluster {
		return t, nil
	}
	tenant, _ := md["tenant"].(string)
	if ann, ok := md["annotations"].(map[string]any); ok {
		if a, _ := ann[tenancy.TenantAnnotation].(string); a != "" {
			if tenant == "" {
				tenant = a
			}
			delete(ann, tenancy.TenantAnnotation)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	if tenant == "" {
		tenant = tenancy.SystemTenant
	}
	if err := tenancy.ValidateTenantName(tenant); err != nil {
		return target{}, err
	}
	t.tenant = tenant
	if r.scope == scopeNamespace {
		t.namespace, _ = md["namespace"].(string)
		if t.namespace == "" {
			t.namespace = "default"
		}
	}
	return t, nil
}

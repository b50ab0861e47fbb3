package source

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
)

// slimCases are list pages as a TP sends them: Arktos's metadata.tenant,
// an upstream object without one, and fields the slim types skip.
var slimCases = []struct {
	res  informer.Resource
	full func() runtime.Object
	body string
}{
	{informer.Services, func() runtime.Object { return &corev1.ServiceList{} }, `{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"c1"},"items":[
		{"metadata":{"name":"api","namespace":"web","tenant":"acme","uid":"u1","labels":{"a":"b"},"managedFields":[{"manager":"m"}]},"spec":{"type":"ClusterIP","clusterIP":"10.0.0.1","clusterIPs":["10.0.0.1","fd00::1"],"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080},{"name":"dns","protocol":"UDP","port":53}]},"status":{"loadBalancer":{}}},
		{"metadata":{"name":"db","namespace":"web","tenant":"system"},"spec":{"clusterIP":"None"}},
		{"metadata":{"name":"ext","namespace":"web","annotations":{"tpkit.dev/tenant":"beta","x":"y"}},"spec":{"type":"ExternalName","externalName":"Example.COM."}},
		{"metadata":{"name":"old","namespace":"default"},"spec":{"clusterIP":"10.0.0.9"}}]}`},
	{informer.Endpoints, func() runtime.Object { return &corev1.EndpointsList{} }, `{"kind":"EndpointsList","apiVersion":"v1","metadata":{"resourceVersion":"8"},"items":[
		{"metadata":{"name":"db","namespace":"web","tenant":"acme"},"subsets":[{"addresses":[{"ip":"10.1.0.1","hostname":"db-0","nodeName":"n1","targetRef":{"kind":"Pod","name":"db-0"}},{"ip":"10.1.0.2"}],"notReadyAddresses":[{"ip":"10.1.0.3"}],"ports":[{"name":"sql","port":5432,"protocol":"TCP"}]},{"addresses":[{"ip":"fd00::2"}]}]},
		{"metadata":{"name":"empty","namespace":"web"}}]}`},
	{informer.EndpointSlices, func() runtime.Object { return &discoveryv1.EndpointSliceList{} }, `{"kind":"EndpointSliceList","apiVersion":"discovery.k8s.io/v1","metadata":{"resourceVersion":"9"},"items":[
		{"metadata":{"name":"db-x1","namespace":"web","tenant":"acme","labels":{"kubernetes.io/service-name":"db","other":"o"}},"addressType":"IPv4","endpoints":[{"addresses":["10.1.0.1"],"hostname":"db-0","conditions":{"ready":true,"serving":true}},{"addresses":["10.1.0.2"],"conditions":{"ready":false}},{"addresses":["10.1.0.4"]}],"ports":[{"name":"sql","port":5432,"protocol":"TCP"}]},
		{"metadata":{"name":"orphan","namespace":"web"},"addressType":"IPv4","endpoints":[{"addresses":["10.1.0.5"]}]},
		{"metadata":{"name":"names","namespace":"web","labels":{"kubernetes.io/service-name":"n"}},"addressType":"FQDN","endpoints":[{"addresses":["a.example"]}]}]}`},
	{informer.Pods, func() runtime.Object { return &corev1.PodList{} }, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[
		{"metadata":{"name":"p1","namespace":"web","tenant":"acme"},"spec":{"containers":[{"name":"c","image":"pause","resources":{}}],"hostNetwork":false},"status":{"phase":"Running","podIP":"10.2.0.1","podIPs":[{"ip":"10.2.0.1"},{"ip":"fd00::3"}]}},
		{"metadata":{"name":"p2","namespace":"kube-system"},"spec":{"hostNetwork":true},"status":{"phase":"Running","podIP":"192.0.2.1"}},
		{"metadata":{"name":"done","namespace":"web","tenant":"acme"},"status":{"phase":"Succeeded","podIP":"10.2.0.9"}},
		{"metadata":{"name":"pending","namespace":"web","tenant":"acme"},"status":{"phase":"Pending"}}]}`},
	{informer.Namespaces, func() runtime.Object { return &corev1.NamespaceList{} }, `{"kind":"NamespaceList","apiVersion":"v1","metadata":{"resourceVersion":"11"},"items":[
		{"metadata":{"name":"web","tenant":"acme"},"status":{"phase":"Active"}},{"metadata":{"name":"default"}}]}`},
}

// TestSlimListsReadWhatFullDecodingReads: a list page read slim, from the
// JSON as the TP sent it, gives the same index records as the same page
// decoded whole after the tenancy transport lifted its tenants, and keeps
// its list fields.
func TestSlimListsReadWhatFullDecodingReads(t *testing.T) {
	for _, tc := range slimCases {
		t.Run(tc.res.Name, func(t *testing.T) {
			slim := slimList(tc.res)
			if slim == nil {
				t.Fatal("no slim list type")
			}
			if err := slim.(json.Unmarshaler).UnmarshalJSON([]byte(tc.body)); err != nil {
				t.Fatal(err)
			}
			lifted, err := tenancyk8s.LiftTenant([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			full := tc.full()
			if err := kjson.UnmarshalCaseSensitivePreserveInts(lifted, full); err != nil {
				t.Fatal(err)
			}
			got, want := recordsOf(t, slim), recordsOf(t, full)
			if len(want) == 0 || !reflect.DeepEqual(got, want) {
				t.Fatalf("slim records:\n%#v\nfull records:\n%#v", got, want)
			}
			sm, _ := meta.ListAccessor(slim)
			fm, _ := meta.ListAccessor(full)
			if sm.GetResourceVersion() != fm.GetResourceVersion() || sm.GetContinue() != fm.GetContinue() {
				t.Fatalf("list meta %q/%q, want %q/%q", sm.GetResourceVersion(), sm.GetContinue(), fm.GetResourceVersion(), fm.GetContinue())
			}
			if cp := slim.DeepCopyObject(); !reflect.DeepEqual(recordsOf(t, cp), got) {
				t.Fatal("DeepCopyObject lost items")
			}
		})
	}
	if slimList(informer.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "configmaps", Namespaced: true}) != nil {
		t.Fatal("a kind the index does not read has a slim list")
	}
}

// recordsOf converts a list's items as the source's sink does, with each
// item's tenant.
func recordsOf(t *testing.T, list runtime.Object) []any {
	t.Helper()
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	for _, it := range items {
		if p, ok := it.(*slimPod); ok { // a listed pod
			out = append(out, []any{p.Metadata.tenant(), toPod(p)})
			continue
		}
		m, err := meta.Accessor(it)
		if err != nil {
			t.Fatal(err)
		}
		var rec any
		switch o := it.(type) {
		case *corev1.Service:
			rec = toService(o)
		case *corev1.Endpoints, *discoveryv1.EndpointSlice:
			rec, _ = endpointsRecord(o)
		case *corev1.Pod:
			rec = toPod(slimOfPod(o))
		case *corev1.Namespace:
			rec = o.Name
		}
		out = append(out, []any{tenantOf(m), rec})
	}
	return out
}

// FuzzSlimServiceList: whatever the bytes, the slim decoder does not panic,
// and a page it accepts gives the records a full decode gives.
func FuzzSlimServiceList(f *testing.F) {
	for _, tc := range slimCases {
		f.Add(tc.body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		slim := slimList(informer.Services)
		if slim.(json.Unmarshaler).UnmarshalJSON([]byte(body)) != nil {
			return
		}
		lifted, err := tenancyk8s.LiftTenant([]byte(body))
		if err != nil {
			return
		}
		var full corev1.ServiceList
		if kjson.UnmarshalCaseSensitivePreserveInts(lifted, &full) != nil { // as client-go decodes
			return
		}
		if got, want := recordsOf(t, slim), recordsOf(t, &full); !reflect.DeepEqual(got, want) {
			t.Fatalf("slim records %#v, full %#v", got, want)
		}
	})
}

// TestSlimObjectsOfATenantShareItsMark: in a page read slim, the objects of
// one tenant share one annotation map, and another tenant's objects
// another; a deep copy of the page has maps of its own.
func TestSlimObjectsOfATenantShareItsMark(t *testing.T) {
	body := `{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[
		{"metadata":{"name":"a1","namespace":"web","tenant":"acme"},"spec":{"clusterIP":"10.0.0.1"}},
		{"metadata":{"name":"b1","namespace":"web","tenant":"beta"},"spec":{"clusterIP":"10.0.0.2"}},
		{"metadata":{"name":"a2","namespace":"db","tenant":"acme"},"spec":{"clusterIP":"10.0.0.3"}},
		{"metadata":{"name":"s1","namespace":"web"},"spec":{"clusterIP":"10.0.0.4"}}]}`
	slim := slimList(informer.Services)
	if err := slim.(json.Unmarshaler).UnmarshalJSON([]byte(body)); err != nil {
		t.Fatal(err)
	}
	mapOf := func(list runtime.Object, i int) uintptr {
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		return reflect.ValueOf(items[i].(*corev1.Service).Annotations).Pointer()
	}
	for i, want := range []string{"acme", "beta", "acme", "system"} {
		items, _ := meta.ExtractList(slim)
		if got := tenantOf(items[i].(*corev1.Service)); got != want {
			t.Fatalf("item %d: tenant %q, want %q", i, got, want)
		}
	}
	if mapOf(slim, 0) != mapOf(slim, 2) || mapOf(slim, 0) == mapOf(slim, 1) || mapOf(slim, 3) != 0 {
		t.Fatalf("annotation maps acme %x %x, beta %x, system %x: want acme's shared, beta's its own, none for system",
			mapOf(slim, 0), mapOf(slim, 2), mapOf(slim, 1), mapOf(slim, 3))
	}
	if cp := slim.DeepCopyObject(); mapOf(cp, 0) == mapOf(slim, 0) || mapOf(cp, 0) == mapOf(cp, 2) {
		t.Fatal("a deep copy shares annotation maps with the page, or among its items")
	}
}

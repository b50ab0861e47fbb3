package faketp

import (
	"bytes"
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// TestSchemeKnowsWhatIsServed: the scheme has the typed kind of every
// served resource and of a pod's binding, and no group version fake-tp
// does not serve.
func TestSchemeKnowsWhatIsServed(t *testing.T) {
	want := map[runtime.Object]string{&corev1.Binding{}: "/v1, Kind=Binding"}
	for _, r := range resources {
		if r.newTyped != nil {
			want[r.newTyped()] = r.gvk().String()
		}
	}
	for o, gvk := range want {
		gvks, _, err := scheme().ObjectKinds(o)
		if err != nil || len(gvks) != 1 || gvks[0].String() != gvk {
			t.Errorf("%T: kinds %v, %v; want %s", o, gvks, err, gvk)
		}
	}
	for gvk := range scheme().AllKnownTypes() {
		if gvk.Version != runtime.APIVersionInternal && !servesGroupVersion(gvk.GroupVersion()) {
			t.Errorf("the scheme knows %s, of a group version fake-tp does not serve", gvk)
		}
	}
}

// TestProtobufBodies: a typed client's protobuf body of each served group
// (and a pod's binding) becomes the same object in JSON, its apiVersion
// and kind included.
func TestProtobufBodies(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "x", Namespace: "web"}
	enc := protobuf.NewSerializer(scheme(), scheme())
	for _, o := range []runtime.Object{
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta, Data: map[string]string{"a": "b"}},
		&corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"}, ObjectMeta: meta, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}},
		&appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}, ObjectMeta: meta},
		&discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"}, ObjectMeta: meta, AddressType: discoveryv1.AddressTypeIPv4},
	} {
		var pb bytes.Buffer
		if err := enc.Encode(o, &pb); err != nil {
			t.Fatalf("%T: %v", o, err)
		}
		got, err := protobufToJSON(pb.Bytes())
		if err != nil {
			t.Fatalf("%T: %v", o, err)
		}
		want, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(normalJSON(t, got), normalJSON(t, want)) {
			t.Errorf("%T: got %s, want %s", o, got, want)
		}
	}
}

// normalJSON is b with its keys in order.
func normalJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	n, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

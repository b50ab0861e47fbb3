package tporigin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

// Hand-written stand-ins of the Arktos kubelet types the entry points plug
// into (Arktos 6685f14; see docs/vendoring.md). They mimic the shapes only.

// UID stands in for k8s.io/apimachinery/pkg/types.UID, a string type.
type UID string

// Pod stands in for Arktos's *v1.Pod: ObjectMeta has Tenant.
type Pod struct {
	Tenant, Namespace, Name string
	UID                     UID
}

func ref(p *Pod) tporigin.PodRef {
	return tporigin.PodRef{UID: string(p.UID), Tenant: p.Tenant, Namespace: p.Namespace, Name: p.Name}
}

// tpClient stands in for one of the kubelet's KubeTPClients
// (clientset.Interface): the requests it would send to its TP.
type tpClient struct {
	name       string
	configMaps map[string]string // "tenant/namespace/name" -> data
}

func (c *tpClient) PatchPodStatus(tenant, namespace, name string, uid UID, phase string) {
	fmt.Printf("  %s: PATCH pod %s/%s/%s status %s\n", c.name, tenant, namespace, name, phase)
}

func (c *tpClient) DeletePod(tenant, namespace, name string, uid UID) {
	fmt.Printf("  %s: DELETE pod %s/%s/%s (precondition uid %s)\n", c.name, tenant, namespace, name, uid)
}

func (c *tpClient) GetConfigMap(tenant, namespace, name string) (string, error) {
	data, ok := c.configMaps[tenant+"/"+namespace+"/"+name]
	if !ok {
		return "", fmt.Errorf("%s: configmap %s/%s/%s not found", c.name, tenant, namespace, name)
	}
	return data, nil
}

// kubeClientManager stands in for Arktos's
// kubeclientmanager.KubeClientManager after the change: the same methods,
// backed by the tracker, and PickClient/PickClientOf say when a pod is
// unknown instead of answering client 0.
type kubeClientManager struct {
	chooser *tporigin.ClientChooser
}

func (m *kubeClientManager) RegisterPodSourceServer(source string, pod *Pod) error {
	tp, ok := tporigin.SourcePartition(source)
	if !ok {
		return nil // a static source: its pods have no TP
	}
	_, err := m.chooser.Record(ref(pod), tp)
	return err
}

func (m *kubeClientManager) UnregisterPodSourceServer(source string, pod *Pod) {
	if tp, ok := tporigin.SourcePartition(source); ok {
		_, _ = m.chooser.Forget(ref(pod), tp)
	}
}

func (m *kubeClientManager) PickClient(podUID UID) (int, error) {
	return m.chooser.PickClient(string(podUID))
}

func (m *kubeClientManager) GetTPClient(kubeClients []*tpClient, podUID UID) (*tpClient, error) {
	i, err := m.chooser.PickClientOf(string(podUID), len(kubeClients))
	if err != nil {
		return nil, err
	}
	return kubeClients[i], nil
}

// podStorage stands in for Arktos's pkg/kubelet/config podStorage: Merge
// takes one update from a source channel ("api0", "api1", ... or "file")
// and passes its pods on to the kubelet's sync loop.
type podStorage struct {
	clients *kubeClientManager
	tracker *tporigin.Tracker
	synced  []*Pod // what the sync loop received
}

func (s *podStorage) Merge(source string, pods []*Pod) error {
	for _, p := range pods {
		// Where Arktos's merge calls RegisterPodSourceServer(source, ref).
		if err := s.clients.RegisterPodSourceServer(source, p); err != nil {
			return err
		}
	}
	// One fsync for the whole update, before the kubelet acts on it.
	if err := s.tracker.Flush(context.Background()); err != nil {
		return err
	}
	s.synced = append(s.synced, pods...)
	return nil
}

// openTracker opens a tracker for a kubelet with two TPs: client 0 is tp-a
// (the first --tenant-server-kubeconfig), client 1 is tp-b.
func openTracker(path string) *tporigin.Tracker {
	t, err := tporigin.Open(tporigin.Options{Path: path, Partitions: []string{"tp-a", "tp-b"}})
	if err != nil {
		panic(err)
	}
	return t
}

// The pod sources record each pod's TP as they deliver it, so every pod
// that reaches the sync loop already has one; a static pod has none, and a
// restarted kubelet knows every recorded pod's TP before any source answers.
func ExampleClientChooser_Record() {
	dir, _ := os.MkdirTemp("", "tporigin-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tporigin.db")

	tracker := openTracker(path)
	clients := &kubeClientManager{chooser: tporigin.NewClientChooser(tracker)}
	storage := &podStorage{clients: clients, tracker: tracker}

	dsA := &Pod{Tenant: "system", Namespace: "kube-system", Name: "ds-x", UID: "0a000000-0000-4000-8000-00000000000a"}
	dsB := &Pod{Tenant: "system", Namespace: "kube-system", Name: "ds-x", UID: "0b000000-0000-4000-8000-00000000000b"}
	web := &Pod{Tenant: "acme", Namespace: "default", Name: "web", UID: "0c000000-0000-4000-8000-00000000000c"}
	static := &Pod{Tenant: "system", Namespace: "kube-system", Name: "etcd-node-1", UID: "static-etcd"}
	_ = storage.Merge("api0", []*Pod{dsA})
	_ = storage.Merge("api1", []*Pod{dsB, web})
	_ = storage.Merge("file", []*Pod{static})

	for _, p := range storage.synced {
		tp, err := clients.PickClient(p.UID)
		fmt.Printf("%s/%s from client %d, unknown: %v\n", p.Tenant, p.Name, tp, errors.Is(err, tporigin.ErrUnknownPod))
	}

	// tp-b removes web: its origin is forgotten.
	clients.UnregisterPodSourceServer("api1", web)
	_, err := clients.PickClient(web.UID)
	fmt.Println("after its removal, web unknown:", errors.Is(err, tporigin.ErrUnknownPod))

	// The kubelet restarts; no TP has answered yet.
	tracker.Close()
	tracker = openTracker(path)
	defer tracker.Close()
	clients = &kubeClientManager{chooser: tporigin.NewClientChooser(tracker)}
	tp, err := clients.PickClient(dsB.UID)
	fmt.Println("after a restart, tp-b's ds-x:", tp, err)
	// Output:
	// system/ds-x from client 0, unknown: false
	// system/ds-x from client 1, unknown: false
	// acme/web from client 1, unknown: false
	// system/etcd-node-1 from client -1, unknown: true
	// after its removal, web unknown: true
	// after a restart, tp-b's ds-x: 1 <nil>
}

// statusManager stands in for Arktos's pkg/kubelet/status manager, built
// with the kubelet's KubeTPClients: syncPod sends a pod's status, and at
// the end its deletion, to the client GetTPClient picks.
type statusManager struct {
	kubeClients []*tpClient
	clients     *kubeClientManager
}

func (m *statusManager) syncPod(uid UID, tenant, namespace, name, phase string, canBeDeleted bool) error {
	tpc, err := m.clients.GetTPClient(m.kubeClients, uid)
	if err != nil {
		// Arktos would use client 0 here, a TP that may not own the pod.
		// Nothing is sent; the status stays queued and is retried.
		return err
	}
	tpc.PatchPodStatus(tenant, namespace, name, uid, phase)
	if canBeDeleted {
		tpc.DeletePod(tenant, namespace, name, uid)
	}
	return nil
}

// The status manager's updates and deletions go to the pod's own TP through
// the same chooser; an unknown pod's status goes nowhere.
func ExampleClientChooser_PickClientOf() {
	tracker := openTracker("")
	defer tracker.Close()
	clients := &kubeClientManager{chooser: tporigin.NewClientChooser(tracker)}
	storage := &podStorage{clients: clients, tracker: tracker}
	m := &statusManager{kubeClients: []*tpClient{{name: "tp-a"}, {name: "tp-b"}}, clients: clients}

	// The same system-tenant name from both TPs, each with its own UID.
	_ = storage.Merge("api0", []*Pod{{Tenant: "system", Namespace: "kube-system", Name: "ds-x", UID: "uid-a"}})
	_ = storage.Merge("api1", []*Pod{{Tenant: "system", Namespace: "kube-system", Name: "ds-x", UID: "uid-b"}})

	fmt.Println("uid-b running:")
	_ = m.syncPod("uid-b", "system", "kube-system", "ds-x", "Running", false)
	fmt.Println("uid-a terminated:")
	_ = m.syncPod("uid-a", "system", "kube-system", "ds-x", "Succeeded", true)
	fmt.Println("uid-x (never delivered by a TP source):")
	err := m.syncPod("uid-x", "system", "kube-system", "ds-x", "Running", false)
	fmt.Println(" ", errors.Is(err, tporigin.ErrUnknownPod), err)
	// Output:
	// uid-b running:
	//   tp-b: PATCH pod system/kube-system/ds-x status Running
	// uid-a terminated:
	//   tp-a: PATCH pod system/kube-system/ds-x status Succeeded
	//   tp-a: DELETE pod system/kube-system/ds-x (precondition uid uid-a)
	// uid-x (never delivered by a TP source):
	//   true tporigin: the pod's tenant partition is not known: pod uid "uid-x" has no recorded origin
}

// configMapManager stands in for Arktos's Get-strategy configmap manager
// (simpleConfigMapManager): GetConfigMap(tenant, namespace, name, podUID)
// reads from the TP ObjectKey decides; the cache and watch strategies key
// their stores by the same ObjectKey (Arktos's originClientID is Client).
type configMapManager struct {
	kubeClients []*tpClient
	chooser     *tporigin.ClientChooser
}

func (s *configMapManager) GetConfigMap(tenant, namespace, name string, podUID UID) (string, error) {
	key, err := s.chooser.ObjectKey(tenant, namespace, name, string(podUID))
	if err != nil {
		return "", err
	}
	return s.kubeClients[key.Client].GetConfigMap(key.Tenant, key.Namespace, key.Name)
}

// Each pod reads its configmaps from its own TP: the system tenant's
// kube-system/cfg exists in both TPs with different data.
func ExampleClientChooser_ObjectKey() {
	tracker := openTracker("")
	defer tracker.Close()
	chooser := tporigin.NewClientChooser(tracker)
	clients := &kubeClientManager{chooser: chooser}
	storage := &podStorage{clients: clients, tracker: tracker}
	m := &configMapManager{chooser: chooser, kubeClients: []*tpClient{
		{name: "tp-a", configMaps: map[string]string{"system/kube-system/cfg": "from tp-a"}},
		{name: "tp-b", configMaps: map[string]string{"system/kube-system/cfg": "from tp-b", "acme/default/app": "acme's, from tp-b"}},
	}}
	_ = storage.Merge("api0", []*Pod{{Tenant: "system", Namespace: "kube-system", Name: "ds-x", UID: "uid-a"}})
	_ = storage.Merge("api1", []*Pod{
		{Tenant: "system", Namespace: "kube-system", Name: "ds-x", UID: "uid-b"},
		{Tenant: "acme", Namespace: "default", Name: "db", UID: "uid-db"},
	})

	for _, c := range []struct {
		tenant, namespace, name string
		pod                     UID
	}{
		{"system", "kube-system", "cfg", "uid-a"},
		{"system", "kube-system", "cfg", "uid-b"},
		// acme lives in tp-b: its pod not yet recorded is placed by tenant.
		{"acme", "default", "app", "uid-web"},
		// A system pod no TP source delivered: no TP's cfg is its.
		{"system", "kube-system", "cfg", "uid-static"},
	} {
		data, err := m.GetConfigMap(c.tenant, c.namespace, c.name, c.pod)
		fmt.Printf("%s: %q %v\n", c.pod, data, err)
	}
	// Output:
	// uid-a: "from tp-a" <nil>
	// uid-b: "from tp-b" <nil>
	// uid-web: "acme's, from tp-b" <nil>
	// uid-static: "" tporigin: the pod's tenant partition is not known: pod uid "uid-static" has no recorded origin, so system/kube-system/cfg cannot be located
}

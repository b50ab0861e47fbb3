package kubeclientmanager

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"

	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

// TPClientManager is the vendoring check's version of KubeClientManager on tpkit's tporigin.
type TPClientManager struct {
	Tracker *tporigin.Tracker
	chooser *tporigin.ClientChooser
}

func NewTPClientManager(t *tporigin.Tracker) *TPClientManager {
	return &TPClientManager{Tracker: t, chooser: tporigin.NewClientChooser(t)}
}

func podRef(p *v1.Pod) tporigin.PodRef {
	return tporigin.PodRef{UID: string(p.UID), Tenant: p.Tenant, Namespace: p.Namespace, Name: p.Name}
}

func (m *TPClientManager) RegisterPodSourceServer(source string, ref *v1.Pod) error {
	if tp, ok := tporigin.SourcePartition(source); ok {
		_, err := m.chooser.Record(podRef(ref), tp)
		return err
	}
	return nil
}

func (m *TPClientManager) Flush() error { return m.Tracker.Flush(context.TODO()) }

func (m *TPClientManager) UnregisterPodSourceServer(pod *v1.Pod) {
	if tp, ok := tporigin.SourcePartition(pod.Annotations[kubetypes.ConfigSourceAnnotationKey]); ok {
		m.chooser.Forget(podRef(pod), tp)
	}
}

func (m *TPClientManager) PickClient(podUID types.UID) (int, error) {
	return m.chooser.PickClient(string(podUID))
}

func (m *TPClientManager) GetTPClient(kubeClients []clientset.Interface, podUID types.UID) (clientset.Interface, error) {
	i, err := m.chooser.PickClientOf(string(podUID), len(kubeClients))
	if err != nil {
		return nil, err
	}
	return kubeClients[i], nil
}

func (m *TPClientManager) ConfigMapClient(tenant, namespace, name string, podUID types.UID) (int, error) {
	k, err := m.chooser.ObjectKey(tenant, namespace, name, string(podUID))
	return k.Client, err
}

// IsNoTP: static, file and http pods.
func IsNoTP(err error) bool { return errors.Is(err, tporigin.ErrUnknownPod) }

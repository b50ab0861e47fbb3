/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package tporigin

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// The kubelet's entry points, in the shapes of Arktos's kubelet, which keeps
// one client per TP (KubeTPClients, in --tenant-server-kubeconfig order) and
// routes every pod-scoped request through its client manager
// (pkg/kubelet/kubeclientmanager): RegisterPodSourceServer at the pod
// sources, PickClient and GetTPClient at the status manager, the configmap
// and secret managers and the other per-pod call sites. Arktos's manager
// keeps that map in memory only and answers TP 0 for any pod it does not
// know; ClientChooser answers from the tracker, which survives restarts, and
// says "unknown" (ErrUnknownPod) instead.

var (
	// ErrUnknownPod: the tracker has no origin for the pod (a static, file
	// or http pod, a pod no TP source has delivered yet, or one already
	// forgotten). There is no default TP: the caller decides, and sends
	// nothing to a TP that may not own the pod.
	ErrUnknownPod = errors.New("tporigin: the pod's tenant partition is not known")
	// ErrUnknownPartition: the pod's TP, or the TP index given, is not one
	// of the node's clients (Options.Partitions); for example an origin
	// loaded from the file of an earlier configuration.
	ErrUnknownPartition = errors.New("tporigin: the tenant partition is not one of this node's clients")
)

// PodRef is what the kubelet entry points need of a pod. An Arktos caller
// builds it from its *v1.Pod:
//
//	tporigin.PodRef{UID: string(pod.UID), Tenant: pod.Tenant, Namespace: pod.Namespace, Name: pod.Name}
type PodRef struct {
	UID       string
	Tenant    string // "" or "system" for the system tenant
	Namespace string
	Name      string
}

func (p PodRef) String() string {
	return fmt.Sprintf("%s/%s/%s (uid %s)", p.Tenant, p.Namespace, p.Name, p.UID)
}

// ClientChooser picks the TP client for a pod, as Arktos's
// kubeclientmanager.KubeClientManager does, from a Tracker's origins. Client
// index i is the tracker's Options.Partitions[i]: open the tracker with one
// name per --tenant-server-kubeconfig file, in flag order, so that the
// indexes are those of the kubelet's KubeTPClients. Names, not indexes, are
// what the file keeps: keep a TP's name the same across restarts even if
// the flag's order changes. A ClientChooser holds no state of its own and is
// safe for concurrent use.
type ClientChooser struct {
	t     *Tracker
	names []string       // client index -> TP name
	index map[string]int // TP name -> client index
}

// NewClientChooser returns the chooser for t's partitions.
func NewClientChooser(t *Tracker) *ClientChooser {
	c := &ClientChooser{t: t, names: t.opts.Partitions, index: make(map[string]int, len(t.opts.Partitions))}
	for i, name := range c.names {
		c.index[name] = i
	}
	return c
}

// PickClient returns the client index of the TP podUID came from. Unlike
// Arktos's PickClient, which falls back to client 0, an unknown pod is an
// error that wraps ErrUnknownPod, and an origin outside the node's clients
// one that wraps ErrUnknownPartition. It takes no lock for UUID-shaped UIDs.
func (c *ClientChooser) PickClient(podUID string) (int, error) {
	tp, ok := c.t.OriginOf(podUID)
	if !ok {
		return -1, fmt.Errorf("%w: pod uid %q has no recorded origin", ErrUnknownPod, podUID)
	}
	return c.clientOf(tp, podUID)
}

func (c *ClientChooser) clientOf(tp, podUID string) (int, error) {
	i, ok := c.index[tp]
	if !ok {
		return -1, fmt.Errorf("%w: pod uid %q comes from partition %q; the node's partitions are %v", ErrUnknownPartition, podUID, tp, c.names)
	}
	return i, nil
}

// PickClientOf is PickClient for a node with n TP clients, for Arktos's
// GetTPClient(kubeClients, podUID): the index to use in the clients slice
// (Arktos's KubeTPClients, in flag order). The errors are PickClient's, and
// ErrUnknownPartition when there is no client at the pod's TP index. An
// unknown pod is never given a client.
func (c *ClientChooser) PickClientOf(podUID string, n int) (int, error) {
	i, err := c.PickClient(podUID)
	if err != nil {
		return -1, err
	}
	if i >= n {
		return -1, fmt.Errorf("%w: pod uid %q comes from client %d of %d", ErrUnknownPartition, podUID, i, n)
	}
	return i, nil
}

// Record records that the pod source of client index tp (the kubelet's
// "api<tp>" source, see SourcePartition) delivered pod. Call it where the
// kubelet takes the pod from that source, before the pod goes on to the
// kubelet's sync loop (Arktos: where podStorage.merge calls
// RegisterPodSourceServer): the origin is then known, to PickClient and
// every other reader, before anything asks for it. A watch of its own
// (testbed/tporigink8s Wire) would race the kubelet's pod watch on the same
// TP, and a pod could be synced before its origin is known.
//
// Record is Observe: the origin is in memory at once and queued for the
// file. To make it durable before the kubelet acts on the pods of one
// update, call Tracker.Flush once after recording them all (one fsync for
// the batch), or let Tracker.Run commit it. A pod already recorded from
// another TP is a Conflict and keeps its first origin.
func (c *ClientChooser) Record(pod PodRef, tp int) (Result, error) {
	name, err := c.partition(tp, pod)
	if err != nil {
		return 0, err
	}
	return c.t.Observe(Observation{UID: pod.UID, Kind: KindPod, Partition: name, Tenant: pod.Tenant})
}

// Forget forgets pod's origin when the pod source of client index tp
// removes it (Arktos: where Kubelet.HandlePodRemoves calls
// UnregisterPodSourceServer). It is Tracker.Forget: a removal by a TP that
// is not the origin changes nothing.
func (c *ClientChooser) Forget(pod PodRef, tp int) (bool, error) {
	name, err := c.partition(tp, pod)
	if err != nil {
		return false, err
	}
	return c.t.Forget(pod.UID, name)
}

func (c *ClientChooser) partition(tp int, pod PodRef) (string, error) {
	if tp < 0 || tp >= len(c.names) {
		return "", fmt.Errorf("%w: pod %s: client index %d, the node has %d", ErrUnknownPartition, pod, tp, len(c.names))
	}
	return c.names[tp], nil
}

// apiserverSource is the kubelet's name for pod sources that are API
// servers (Arktos's kubetypes.ApiserverSource); the TP sources are
// "api0", "api1", ... in KubeTPClients order.
const apiserverSource = "api"

// SourcePartition returns the client index of a kubelet pod source named
// "api<N>" (Arktos's makePodSourceConfig names the source of KubeTPClients[N]
// so). Any other source is not a TP and ok is false: file, http and other
// static sources, and "api" alone, which Arktos uses to restore pods from a
// checkpoint and maps to client 0 (their origins are in the tracker's file
// instead).
func SourcePartition(source string) (tp int, ok bool) {
	if !strings.HasPrefix(source, apiserverSource) {
		return 0, false
	}
	digits := source[len(apiserverSource):]
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || strconv.Itoa(n) != digits {
		return 0, false
	}
	return n, true
}

// ObjectKey is where a configmap or secret that a pod reads lives: its key,
// whose Partition is the pod's TP, and that TP's client index (Arktos's
// originClientID in the managers' store keys).
type ObjectKey struct {
	tenancy.Key
	Client int
}

// ObjectKey decides which TP the object tenant/namespace/name comes from
// for the pod podUID, in the shape of Arktos's managers,
// GetConfigMap(tenant, namespace, name, podUID) and GetSecret: the pod's
// recorded origin, else, for a regular tenant, its tenant's TP (a regular
// tenant lives in one TP). The system tenant exists in every TP, so a
// system pod with no recorded origin is an error that wraps ErrUnknownPod:
// never TP 0's object of the same name. The key's tenant is
// tenancy.SystemTenant for "" and "system".
func (c *ClientChooser) ObjectKey(tenant, namespace, name, podUID string) (ObjectKey, error) {
	key := tenancy.Key{Tenant: tenancy.NormalTenant(tenant), Namespace: namespace, Name: name}
	tp, ok := c.t.OriginOf(podUID)
	if !ok && tenant != tenancy.SystemTenant {
		tp, ok = c.t.PartitionOfTenant(tenant)
	}
	if !ok {
		return ObjectKey{}, fmt.Errorf("%w: pod uid %q has no recorded origin, so %s/%s/%s cannot be located", ErrUnknownPod, podUID, tenant, namespace, name)
	}
	i, err := c.clientOf(tp, podUID)
	if err != nil {
		return ObjectKey{}, err
	}
	key.Partition = tp
	if err := key.Validate(); err != nil {
		return ObjectKey{}, fmt.Errorf("tporigin: pod uid %q: %w", podUID, err)
	}
	return ObjectKey{Key: key, Client: i}, nil
}

package faketp_test

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

// master is what a TP serves as its master service, read through
// client-go's short paths as Arktos's kube-proxy reads it (the caller's
// tenant: system for the admin).
type master struct {
	svc *corev1.Service
	ep  *corev1.Endpoints
	// groupID is the subset's Arktos serviceGroupId, which upstream types
	// do not carry.
	groupID string
}

func readMaster(t *testing.T, tp *faketp.TP) master {
	t.Helper()
	cs, err := kubernetesFor(tp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var m master
	if m.svc, err = cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err != nil {
		t.Fatalf("%s: service default/kubernetes: %v", tp.Name(), err)
	}
	if m.ep, err = cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err != nil {
		t.Fatalf("%s: endpoints default/kubernetes: %v", tp.Name(), err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/endpoints/kubernetes").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ep struct {
		Subsets []struct {
			ServiceGroupID string `json:"serviceGroupId"`
		}
	}
	if err := json.Unmarshal(raw, &ep); err != nil || len(ep.Subsets) != 1 {
		t.Fatalf("%s: endpoints %s: %v", tp.Name(), raw, err)
	}
	m.groupID = ep.Subsets[0].ServiceGroupID
	return m
}

// check fails unless m points at ip:port with cluster IP clusterIP, as
// Arktos's API server writes them (samples 34, 37).
func (m master) check(t *testing.T, clusterIP, ip string, port int) {
	t.Helper()
	s := m.svc
	if s.Spec.ClusterIP != clusterIP || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "https" || s.Spec.Ports[0].Port != 443 ||
		s.Spec.Ports[0].TargetPort.IntValue() != port || s.Spec.Ports[0].Protocol != corev1.ProtocolTCP || len(s.Spec.Selector) != 0 ||
		s.Labels["component"] != "apiserver" || s.Labels["provider"] != "kubernetes" {
		t.Errorf("service: %+v %+v, want cluster IP %s, 443/https -> %d, no selector", s.Labels, s.Spec, clusterIP, port)
	}
	e := m.ep
	if len(e.Subsets) != 1 || len(e.Subsets[0].Addresses) != 1 || e.Subsets[0].Addresses[0].IP != ip ||
		len(e.Subsets[0].Ports) != 1 || e.Subsets[0].Ports[0].Port != int32(port) || e.Subsets[0].Ports[0].Name != "https" || m.groupID != "0" {
		t.Errorf("endpoints: %+v serviceGroupId %q, want %s:%d (https), group 0", e.Subsets, m.groupID, ip, port)
	}
}

func portOf(t *testing.T, tp *faketp.TP) int {
	t.Helper()
	_, p, err := net.SplitHostPort(tp.Addr())
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMasterService: every TP serves default/kubernetes of the system
// tenant pointing at itself, with the first address of its own service
// range; a restart on the same port writes nothing, one on another port
// (a data file loaded by a new process) moves the Endpoints and keeps the
// objects' uids; seeding and generating leave them alone.
func TestMasterService(t *testing.T) {
	dir := t.TempDir()
	c := faketp.StartT(t, faketp.Options{Partitions: 2, DataDir: dir})
	for i, tp := range c.TPs() {
		readMaster(t, tp).check(t, []string{"10.96.0.1", "10.97.0.1"}[i], "127.0.0.1", portOf(t, tp))
	}
	tp1 := c.TP("tp1")
	if err := tp1.Generate(faketp.Scaled(100)); err != nil {
		t.Fatal(err)
	}
	before := readMaster(t, tp1)
	if err := tp1.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := readMaster(t, tp1)
	after.check(t, "10.96.0.1", "127.0.0.1", portOf(t, tp1))
	if after.svc.ResourceVersion != before.svc.ResourceVersion || after.ep.ResourceVersion != before.ep.ResourceVersion {
		t.Errorf("a restart on the same port rewrote the master service: versions %s/%s, before %s/%s",
			after.svc.ResourceVersion, after.ep.ResourceVersion, before.svc.ResourceVersion, before.ep.ResourceVersion)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}

	// A new process on the same data files, on other ports, advertising
	// another address.
	c2 := faketp.StartT(t, faketp.Options{Partitions: 2, DataDir: dir, AdvertiseAddress: "192.0.2.2"})
	tp1 = c2.TP("tp1")
	if portOf(t, tp1) == portOf(t, c.TP("tp1")) {
		t.Skip("the new process got the same port; nothing to move") // port 0 reused: rare
	}
	moved := readMaster(t, tp1)
	moved.check(t, "10.96.0.1", "192.0.2.2", portOf(t, tp1))
	if moved.svc.UID != before.svc.UID || moved.ep.UID != before.ep.UID {
		t.Errorf("moving the master service changed its uids")
	}
	if moved.ep.ResourceVersion == before.ep.ResourceVersion {
		t.Errorf("the moved Endpoints kept resourceVersion %s", moved.ep.ResourceVersion)
	}
}

// TestAdvertiseAddressRefused: an advertise address that is not an IP is a
// clear error.
func TestAdvertiseAddressRefused(t *testing.T) {
	if _, err := faketp.NewTP(faketp.TPOptions{Name: "tp1", KubeconfigDir: t.TempDir(), AdvertiseAddress: "not-an-ip"}); err == nil {
		t.Fatal("NewTP took the advertise address not-an-ip")
	}
}

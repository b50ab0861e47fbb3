package iptables

import "testing"

// TestTpkitChainHashes pins Arktos's chain names for three service ports;
// tpkit's TestChainNamesPinned (pkg/kubeproxy/iptables) pins the same
// hashes for its own chains, so the two agree.
func TestTpkitChainHashes(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{string(servicePortChainName("system_1/kube-system/kube-dns:dns", "udp")), "KUBE-SVC-4QFVOSQSETURAHND"},
		{string(servicePortEndpointChainName("system_1/kube-system/kube-dns:dns", "udp", "10.244.1.2:53")), "KUBE-SEP-6UXSWHAURPJHI5MJ"},
		{string(servicePortChainName("t1_0/default/web:", "tcp")), "KUBE-SVC-6GHVOWSJPPD7TJAC"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

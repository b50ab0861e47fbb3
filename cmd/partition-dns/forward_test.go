package main

import (
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

// TestForwardTimeoutFlag: --forward-timeout is the time one upstream gets
// for a query, whole: a real UDP query for a name outside the zones, sent
// to partition-dns with a silent upstream, is answered SERVFAIL once the
// upstream has had the flag's 6 s, not sooner. The handler's own bound
// (server.Options.ForwardTimeout, 5 s when unset) once cut it short at 5 s,
// since partition-dns did not pass the flag on.
func TestForwardTimeoutFlag(t *testing.T) {
	t.Parallel()
	const flag = 6 * time.Second
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var asked atomic.Int32
	go func() {
		buf := make([]byte, 1500)
		for {
			if _, _, err := silent.ReadFrom(buf); err != nil {
				return
			}
			asked.Add(1)
		}
	}()

	cl := faketp.StartT(t, faketp.Options{Partitions: 1})
	dnsAddr, health := freePort(t), freePort(t)
	runProgram(t, []string{
		"--tenant-server-kubeconfig", strings.Join(cl.KubeconfigPaths(), ","),
		"--listen", dnsAddr, "--health-listen", health, "--metrics-listen", "", "--ready-listen", "",
		"--upstream", silent.LocalAddr().String(), "--forward-timeout", flag.String(),
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if code, _ := get("http://" + health + "/readyz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
	}

	m := new(dns.Msg)
	m.SetQuestion("silent.example.org.", dns.TypeA)
	client := &dns.Client{Net: "udp", Timeout: 4 * flag}
	start := time.Now()
	r, _, err := client.Exchange(m, dnsAddr)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("no answer after %s: %v", took, err)
	}
	if r.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	if asked.Load() == 0 {
		t.Error("the upstream was never asked")
	}
	if took < flag {
		t.Errorf("SERVFAIL after %s, before the upstream had --forward-timeout %s", took.Round(time.Millisecond), flag)
	}
	t.Logf("SERVFAIL after %s with --forward-timeout %s", took.Round(time.Millisecond), flag)
}

package iptables

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
)

// The network-namespace test uses 198.18.0.0/15 (RFC 2544, benchmarking),
// which exists only inside the namespaces it creates.
const (
	clientAddr = "198.18.0.1/24"
	peerAddr   = "198.18.0.2"
	vipRange   = "198.19.0.0/16"
)

// netnsEnv is a client namespace (where the rules are programmed, as on a
// node) and a backend namespace, joined by a veth pair.
type netnsEnv struct {
	client, backends string
}

func requireNetns(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping network-namespace test: needs root")
	}
	if err := exec.Command("ip", "netns", "list").Run(); err != nil {
		t.Skipf("skipping network-namespace test: `ip netns` is unavailable: %v", err)
	}
	// Root with network namespaces but without iptables is a broken test
	// machine, not a reason to skip: .ci/run installs it.
	for _, bin := range []string{"iptables", "iptables-restore", "iptables-save"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed: apt-get install -y iptables", bin)
		}
	}
}

func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func newNetnsEnv(t testing.TB) *netnsEnv {
	t.Helper()
	var b [3]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	e := &netnsEnv{client: "tpkp-c-" + id, backends: "tpkp-b-" + id}
	for _, ns := range []string{e.client, e.backends} {
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Logf("cleanup: ip netns del %s: %v %s", ns, err, out)
			}
		})
	}
	c, bk := []string{"ip", "netns", "exec", e.client}, []string{"ip", "netns", "exec", e.backends}
	run(t, append(c, "ip", "link", "add", "vc", "type", "veth", "peer", "name", "vb", "netns", e.backends)...)
	run(t, append(c, "ip", "link", "set", "lo", "up")...)
	run(t, append(c, "ip", "addr", "add", clientAddr, "dev", "vc")...)
	run(t, append(c, "ip", "link", "set", "vc", "up")...)
	run(t, append(c, "ip", "route", "add", vipRange, "via", peerAddr)...)
	run(t, append(bk, "ip", "link", "set", "lo", "up")...)
	run(t, append(bk, "ip", "addr", "add", peerAddr+"/24", "dev", "vb")...)
	run(t, append(bk, "ip", "link", "set", "vb", "up")...)
	return e
}

// in runs fn on an OS thread that has joined namespace ns. Sockets created
// and processes started by fn live in ns.
func in(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			runtime.UnlockOSThread()
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			runtime.UnlockOSThread()
			return
		}
		defer target.Close()
		if err := setns(target); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			runtime.UnlockOSThread()
			return
		}
		ferr := fn()
		if err := setns(orig); err != nil {
			// Leave the thread locked: it dies with this goroutine rather than
			// serve others from the wrong namespace.
			errc <- fmt.Errorf("returning from %s: %w", ns, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

// backend is a TCP server on addr in the backend namespace that answers
// every connection with "<tp> <addr>".
func (e *netnsEnv) backend(t *testing.T, tp, ip string) {
	t.Helper()
	run(t, "ip", "netns", "exec", e.backends, "ip", "addr", "add", ip+"/24", "dev", "vb")
	var ln net.Listener
	if err := in(e.backends, func() (err error) {
		ln, err = net.Listen("tcp", ip+":8080")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "%s %s\n", tp, ip)
			c.Close()
		}
	}()
}

// dial connects from the client namespace and returns the answer.
func (e *netnsEnv) dial(addr string) (string, error) {
	var answer string
	err := in(e.client, func() error {
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		answer, err = bufio.NewReader(c).ReadString('\n')
		answer = strings.TrimSpace(answer)
		return err
	})
	return answer, err
}

// answers dials addr n times and counts the answers.
func (e *netnsEnv) answers(t *testing.T, addr string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for i := 0; i < n; i++ {
		a, err := e.dial(addr)
		if err != nil {
			t.Fatalf("dial %s: %v (answers so far %v)", addr, err, got)
		}
		got[a]++
	}
	return got
}

func (e *netnsEnv) save(t *testing.T) string {
	return run(t, "ip", "netns", "exec", e.client, "iptables-save")
}

func (e *netnsEnv) proxier(t *testing.T) *Proxier {
	t.Helper()
	var p *Proxier
	if err := in(e.client, func() (err error) { p, err = New(Options{}); return err }); err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *netnsEnv) apply(t *testing.T, p *Proxier, s *kubeproxy.Snapshot, c kubeproxy.Changes) Result {
	t.Helper()
	var res Result
	if err := in(e.client, func() (err error) { res, err = p.Apply(context.Background(), s, c); return err }); err != nil {
		t.Fatalf("apply: %v\n%s", err, e.save(t))
	}
	return res
}

// TestNetnsVIPReachesOnlyItsTP programs the rules for the same system
// service in two TPs into a namespace and sends real connections to each
// service's cluster IP: each reaches only its own TP's backends, through
// updates, endpoint loss, deletion and TP removal.
func TestNetnsVIPReachesOnlyItsTP(t *testing.T) {
	requireNetns(t)
	e := newNetnsEnv(t)
	e.backend(t, "tp1", "198.18.0.11")
	e.backend(t, "tp1", "198.18.0.12")
	e.backend(t, "tp2", "198.18.0.21")
	e.backend(t, "tp2", "198.18.0.22")

	v := kubeproxy.NewView([]int{0, 1}, kubeproxy.Options{})
	v.OnServiceAdd(svc("system", "kube-system", "kube-dns", "198.19.0.10", "dns", 53), 0)
	v.OnServiceAdd(svc("system", "kube-system", "kube-dns", "198.19.1.10", "dns", 53), 1)
	v.OnEndpointsAdd(slice("system", "kube-system", "kube-dns-x", "kube-dns", "dns", 8080, "198.18.0.11", "198.18.0.12"), 0)
	v.OnEndpointsAdd(slice("system", "kube-system", "kube-dns-x", "kube-dns", "dns", 8080, "198.18.0.21", "198.18.0.22"), 1)
	for _, tp := range []int{0, 1} {
		v.OnServiceSynced(tp)
		v.OnEndpointsSynced(tp)
	}

	p := e.proxier(t)
	t.Cleanup(func() {
		if err := in(e.client, func() error { return p.Cleanup(context.Background()) }); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	s := kubeproxy.NewSnapshot()
	if res := e.apply(t, p, s, v.Apply(s)); !res.Full || res.Services != 2 {
		t.Fatalf("first sync %+v", res)
	}

	const n = 24
	vip1, vip2 := "198.19.0.10:53", "198.19.1.10:53"
	got1, got2 := e.answers(t, vip1, n), e.answers(t, vip2, n)
	for a := range got1 {
		if !strings.HasPrefix(a, "tp1 ") {
			t.Fatalf("TP1's VIP reached %q: %v", a, got1)
		}
	}
	for a := range got2 {
		if !strings.HasPrefix(a, "tp2 ") {
			t.Fatalf("TP2's VIP reached %q: %v", a, got2)
		}
	}
	// Both endpoints of a TP serve (chance of missing one: 2^-23).
	if len(got1) != 2 || len(got2) != 2 {
		t.Fatalf("load not spread over each TP's two endpoints: %v %v", got1, got2)
	}

	// TP2 loses one endpoint: only TP2's service is rewritten.
	v.OnEndpointsUpdate(nil, slice("system", "kube-system", "kube-dns-x", "kube-dns", "dns", 8080, "198.18.0.22"), 1)
	res := e.apply(t, p, s, v.Apply(s))
	if res.Full || res.Services != 1 || res.ChainsDeleted != 1 {
		t.Fatalf("endpoint update rewrote %+v, want 1 service and 1 chain deleted", res)
	}
	if got := e.answers(t, vip2, 6); len(got) != 1 || got["tp2 198.18.0.22"] != 6 {
		t.Fatalf("after the update TP2's VIP answered %v", got)
	}
	if got := e.answers(t, vip1, 6); len(got) == 0 || got["tp2 198.18.0.22"] != 0 {
		t.Fatalf("TP1's VIP after TP2's update: %v", got)
	}

	// TP1 loses every endpoint: its VIP is rejected, not sent to TP2.
	v.OnEndpointsDelete(slice("system", "kube-system", "kube-dns-x", "kube-dns", "dns", 8080), 0)
	if res := e.apply(t, p, s, v.Apply(s)); res.Services != 1 {
		t.Fatalf("endpoint loss rewrote %+v", res)
	}
	if a, err := e.dial(vip1); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("TP1's VIP without endpoints: answer %q, err %v; want connection refused", a, err)
	}

	// TP2 is removed from the configuration: its rules go.
	v.SetPartitions([]int{0})
	if res := e.apply(t, p, s, v.Apply(s)); res.Services != 1 || res.ChainsDeleted != 2 {
		t.Fatalf("TP removal %+v", res)
	}
	if _, err := e.dial(vip2); err == nil {
		t.Fatal("TP2's VIP still answers after TP2 was removed")
	}
	if saved := e.save(t); strings.Contains(saved, "system_1/") || strings.Count(saved, ":"+ServiceChainPrefix) != 0 {
		t.Fatalf("TP2 rules left:\n%s", saved)
	}

	// A restarted proxier (fresh memory) with TP2 back does a full sync that
	// serves both TPs again and removes nothing it still needs.
	v.SetPartitions([]int{0, 1})
	v.OnServiceAdd(svc("system", "kube-system", "kube-dns", "198.19.1.10", "dns", 53), 1)
	v.OnEndpointsAdd(slice("system", "kube-system", "kube-dns-x", "kube-dns", "dns", 8080, "198.18.0.21"), 1)
	p2 := e.proxier(t)
	s2 := kubeproxy.NewSnapshot()
	if res := e.apply(t, p2, s2, v.Apply(s2)); !res.Full {
		t.Fatalf("restart sync %+v", res)
	}
	if got := e.answers(t, vip2, 4); got["tp2 198.18.0.21"] != 4 {
		t.Fatalf("after restart TP2's VIP answered %v", got)
	}
	saved := e.save(t)
	if strings.Count(saved, "-j "+ServicesChain) != 4 {
		t.Fatalf("jumps to %s should exist once per hook:\n%s", ServicesChain, saved)
	}
}

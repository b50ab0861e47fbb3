package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/testbed/upstreamtest"
)

// The subcommand tests run this test binary as the partition-dns program:
// with mainArgsEnv set, TestMain calls main() with those arguments, so exit
// codes and signals are the real program's.
const mainArgsEnv = "TPKIT_PARTITION_DNS_ARGS"

func TestMain(m *testing.M) {
	if a, ok := os.LookupEnv(mainArgsEnv); ok {
		os.Args = append([]string{"partition-dns"}, strings.Split(a, "\x1f")...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func program(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+strings.Join(args, "\x1f"))
	return cmd
}

func TestSubcommandExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"node-cache", "-h"}, 0},
		{[]string{"node-cache-watch", "-h"}, 0},
		{[]string{"node-cache", "--no-such-flag"}, 2},
		{[]string{"node-cache-watch", "--no-such-flag"}, 2},
		{[]string{"node-cache", "--local-ip", "not-an-ip"}, 2},
		// The cluster DNS server's own flags are not the cache's.
		{[]string{"node-cache", "--tenant-server-kubeconfig", "x"}, 2},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := program(tc.args...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			got := 0
			if ee, ok := err.(*exec.ExitError); ok {
				got = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", got, tc.want, stderr.String())
			}
			if tc.want == 2 && !strings.Contains(stderr.String(), "partition-dns "+tc.args[0]+":") {
				t.Errorf("stderr does not name the subcommand:\n%s", stderr.String())
			}
		})
	}
}

// `partition-dns node-cache` is the real cache: it answers cluster names from
// the node-local-upstream server (over TCP) and stops cleanly on SIGTERM.
// Interface and iptables setup are off here; pkg/nodelocal tests them in a
// network namespace.
func TestNodeCacheSubcommandServes(t *testing.T) {
	upstream := &dns.Server{Net: "tcp", Addr: "127.0.0.1:0", Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.IPv4(10, 9, 8, 7)})
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	upstream.NotifyStartedFunc = func() { close(started) }
	go func() { _ = upstream.ListenAndServe() }()
	<-started
	t.Cleanup(func() { _ = upstream.Shutdown() })
	_, upPort, _ := net.SplitHostPort(upstream.Listener.Addr().String())

	_, port, _ := net.SplitHostPort(freePort(t))
	var stderr bytes.Buffer
	cmd := program("node-cache",
		"--local-ip", "127.0.0.2", "--dns-port", port,
		"--setup-interface=false", "--setup-iptables=false",
		"--upstream-svc-ip", "127.0.0.1", "--upstream-svc-port", upPort,
		"--upstream-servers", "127.0.0.1:"+upPort,
		"--health-port", "0", "--metrics-listen-address", "", "--drain-duration", "0s")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	q := new(dns.Msg)
	q.SetQuestion("kube-dns.kube-system.svc.cluster.local.", dns.TypeA)
	var r *dns.Msg
	deadline := time.Now().Add(time.Minute)
	for {
		var err error
		r, err = dns.Exchange(q, net.JoinHostPort("127.0.0.2", port))
		if err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("node-cache exited early: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("node-cache never answered: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.9.8.7" {
		t.Fatalf("answer %v, want the upstream's 10.9.8.7", r)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("node-cache did not stop on SIGTERM\n%s", stderr.String())
	}
}

// TestNodeCacheRootZone: with "." among --cluster-zones, node-cache sends
// every name, not only the cluster's, to partition-dns (--upstream-svc-ip,
// over TCP) with the asking pod's address as ECS, so that the pod's TP's
// kube-dns ConfigMap applies to it; without it, other names go to the
// host's resolvers. Real sockets: a TCP "partition-dns" that echoes the ECS
// address it got, a UDP "host resolver", the real program.
func TestNodeCacheRootZone(t *testing.T) {
	svc := &dns.Server{Net: "tcp", Addr: "127.0.0.1:0", Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		ip := net.IPv4(10, 9, 8, 7) // no ECS
		if opt := r.IsEdns0(); opt != nil {
			for _, o := range opt.Option {
				if s, ok := o.(*dns.EDNS0_SUBNET); ok {
					ip = s.Address
				}
			}
		}
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 0}, A: ip})
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	svc.NotifyStartedFunc = func() { close(started) }
	go func() { _ = svc.ListenAndServe() }()
	<-started
	t.Cleanup(func() { _ = svc.Shutdown() })
	_, svcPort, _ := net.SplitHostPort(svc.Listener.Addr().String())
	host := upstreamtest.Nameserver(t, "192.0.2.53", 0)

	for _, tc := range []struct {
		zones, want string
	}{
		{"cluster.local,in-addr.arpa,ip6.arpa,.", "127.0.0.7"}, // the pod's address, from partition-dns
		{"cluster.local,in-addr.arpa,ip6.arpa", "192.0.2.53"},  // the host's resolver
	} {
		_, port, _ := net.SplitHostPort(freePort(t))
		var stderr bytes.Buffer
		cmd := program("node-cache", "--cluster-zones", tc.zones,
			"--local-ip", "127.0.0.2", "--dns-port", port,
			"--setup-interface=false", "--setup-iptables=false",
			"--upstream-svc-ip", "127.0.0.1", "--upstream-svc-port", svcPort, "--upstream-servers", host,
			"--health-port", "0", "--metrics-listen-address", "", "--drain-duration", "0s")
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := &dns.Client{Net: "udp", Timeout: time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP("127.0.0.7")}}}
		q := new(dns.Msg)
		q.SetQuestion("www.example.org.", dns.TypeA)
		var r *dns.Msg
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			var err error
			if r, _, err = c.Exchange(q, net.JoinHostPort("127.0.0.2", port)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("--cluster-zones %s: node-cache never answered: %v\n%s", tc.zones, err, stderr.String())
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != tc.want {
			t.Errorf("--cluster-zones %s: answer %v, want %s", tc.zones, r.Answer, tc.want)
		}
	}
}

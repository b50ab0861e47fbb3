//go:build unix

package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

// TestDemoRefusesTakenPorts runs hack/demo.sh with its health port (TCP)
// and, when ss can see UDP sockets, its DNS port (UDP) held by this test:
// it must exit 1 before building anything, naming each variable and port.
func TestDemoRefusesTakenPorts(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	port := func() string {
		_, p, err := net.SplitHostPort(testbin.FreePort(t))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	health, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer health.Close()
	_, healthPort, _ := net.SplitHostPort(health.Addr().String())
	want := []string{fmt.Sprintf("DEMO_HEALTH_PORT %s is in use (tcp", healthPort), "set DEMO_HEALTH_PORT to a free port"}

	dnsPort := port()
	_, ssErr := exec.LookPath("ss")
	if ssErr == nil { // without ss the script cannot see a UDP socket
		dns, err := net.ListenPacket("udp", "127.0.0.1:"+dnsPort)
		if err != nil {
			t.Fatal(err)
		}
		defer dns.Close()
		want = append(want,
			fmt.Sprintf("DEMO_DNS_PORT %s is in use (udp, by PID %d,", dnsPort, os.Getpid()),
			fmt.Sprintf("DEMO_HEALTH_PORT %s is in use (tcp, by PID %d,", healthPort, os.Getpid()))
	}

	ctx, cancel := context.WithTimeout(context.Background(), testbin.Deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "hack/demo.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"DEMO_TP_LISTEN=127.0.0.1:0",
		"DEMO_DNS_PORT="+dnsPort,
		"DEMO_HEALTH_PORT="+healthPort,
		"DEMO_METRICS_PORT="+port(),
		"DEMO_READY_PORT="+port(),
		"DEMO_ADMIN_PORT="+port(),
		"BIN="+t.TempDir(), // should the check miss, nothing lands in the tree's bin/
	)
	// Should the check miss, the demo would start its programs and run
	// until stopped: on timeout, kill its whole process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("hack/demo.sh took %v:\n%s", time.Since(start).Round(time.Millisecond), out)

	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("hack/demo.sh with taken ports: %v, want exit status 1", err)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("output lacks %q", w)
		}
	}
	if strings.Contains(string(out), "Building") {
		t.Error("the demo went on to build after finding a taken port")
	}
}

package netns

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// NS is one named network namespace.
type NS struct {
	// Name is the name under /run/netns.
	Name string
}

// Available reports why namespaces cannot be used here, or "" when they can:
// the caller must be root and `ip netns` must work.
func Available() string {
	if os.Geteuid() != 0 {
		return "needs root to create network namespaces and program iptables"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "needs the ip command (iproute2)"
	}
	name := uniqueName()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Sprintf("ip netns add failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	_ = exec.Command("ip", "netns", "del", name).Run()
	return ""
}

// New creates a namespace with its loopback up and deletes it when the test
// ends. It skips the test when namespaces are unavailable.
func New(t testing.TB) *NS {
	t.Helper()
	if why := Available(); why != "" {
		t.Skipf("skipping: %s", why)
	}
	ns := &NS{Name: uniqueName()}
	if out, err := exec.Command("ip", "netns", "add", ns.Name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", ns.Name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns.Name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", ns.Name, err, out)
		}
	})
	ns.MustRun(t, "ip", "link", "set", "lo", "up")
	return ns
}

func uniqueName() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return "tpk-" + hex.EncodeToString(b)
}

// Command returns a command that runs inside the namespace.
func (ns *NS) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// Run runs a command inside the namespace and returns its combined output.
func (ns *NS) Run(name string, args ...string) (string, error) {
	out, err := ns.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// MustRun is Run that fails the test on error.
func (ns *NS) MustRun(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := ns.Run(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Do runs f on an OS thread switched into the namespace. Sockets that f
// opens stay in the namespace after Do returns; processes that f starts
// (os/exec forks from the calling thread) start in it. f must not start
// goroutines that expect to be in the namespace. f runs on a goroutine of its
// own, so a thread that cannot be switched back is retired with it.
func (ns *NS) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- ns.do(f) }()
	return <-errc
}

func (ns *NS) do(f func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + ns.Name)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns %s: %w", ns.Name, err)
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// Stay locked: the runtime retires this thread when the goroutine
		// exits, so it never runs other code in the namespace.
		return fmt.Errorf("setns back from %s: %w", ns.Name, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

package arktoslab

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Spawn starts the program path with args, its output in the file log, and
// AWS_EC2_METADATA_DISABLED=true in its environment (Kubernetes 1.18's
// cloud credential code otherwise probes a metadata address). It runs in a
// process group of its own and dies with the test binary (Pdeathsig).
func Spawn(log, path string, args ...string) (*exec.Cmd, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %v", path, err)
	}
	go func() { _ = cmd.Wait(); f.Close() }()
	return cmd, nil
}

// Stop kills cmd's process group and waits up to 5 s for the process to go.
func Stop(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	for i := 0; i < 100 && syscall.Kill(cmd.Process.Pid, 0) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
}

// Alive says whether cmd's process still runs.
func Alive(cmd *exec.Cmd) bool {
	return cmd != nil && cmd.Process != nil && syscall.Kill(cmd.Process.Pid, 0) == nil
}

// Tail is the last n lines of the file at path, to show why a program
// stopped.
func Tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreePort is a TCP port that was free on 127.0.0.1 a moment ago, for a
// program that takes its port as a flag.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// CheckLabHost says why a lab must not run here, or nil: /var/lib must be
// the lab's own tmpfs (what hollow-node writes there, and what a lab
// removes, must never be the host's), and bin must hold progs. target is
// the make target that runs the lab properly.
func CheckLabHost(target, bin string, progs ...string) error {
	var fs syscall.Statfs_t
	if err := syscall.Statfs("/var/lib", &fs); err != nil || fs.Type != 0x01021994 { // TMPFS_MAGIC
		return fmt.Errorf("/var/lib is not the lab's tmpfs: run this through `make %s`", target)
	}
	for _, p := range progs {
		if _, err := os.Stat(filepath.Join(bin, p)); err != nil {
			return fmt.Errorf("ARKTOS_BIN=%s has no %s", bin, p)
		}
	}
	return nil
}

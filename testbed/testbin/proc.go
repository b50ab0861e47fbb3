//go:build linux

package testbin

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Deadline bounds every wait of a Proc. It only detects hangs: nothing
// asserts how fast a program is.
const Deadline = 60 * time.Second

// Proc is a program started by Start, running or exited.
type Proc struct {
	// Label names the program in messages ("tp1", "partition-dns").
	Label string
	// Cmd is the running command.
	Cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	err  error // Wait's result, set before done closes
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Start runs the program at path for the test t. owner, t itself or an
// enclosing test that the program must outlive t for, stops it: its
// cleanup kills the program if it still runs and prints its output if the
// test failed. Pdeathsig kills it if the test binary dies without cleaning
// up (a panic, a -timeout).
func Start(t, owner testing.TB, label, path string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Label: label, Cmd: exec.Command(path, args...), done: make(chan struct{})}
	p.Cmd.Stdout, p.Cmd.Stderr = &p.out, &p.out
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", label, err)
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.done)
	}()
	owner.Cleanup(func() {
		if !p.Exited() {
			_ = p.Cmd.Process.Kill()
			<-p.done
		}
		if owner.Failed() {
			owner.Logf("---- %s (%s %s) output:\n%s", label, path, strings.Join(args, " "), p.Output())
		}
	})
	return p
}

// Output is what the program has written to stdout and stderr so far.
func (p *Proc) Output() string { return p.out.String() }

// Exited reports whether the program has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is Wait's error once the program has exited (nil for status 0), and
// nil while it runs.
func (p *Proc) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// WaitOutput waits until the output holds n lines with substr, and returns
// them. The program exiting first fails the test.
func (p *Proc) WaitOutput(t testing.TB, substr string, n int) []string {
	t.Helper()
	end := time.Now().Add(Deadline)
	for {
		var lines []string
		for _, l := range strings.Split(p.Output(), "\n") {
			if strings.Contains(l, substr) {
				lines = append(lines, l)
			}
		}
		if len(lines) >= n {
			return lines
		}
		if p.Exited() {
			t.Fatalf("%s exited (%v) before printing %d lines with %q", p.Label, p.err, n, substr)
		}
		if time.Now().After(end) {
			t.Fatalf("%s: no %d lines with %q within %v", p.Label, n, substr, Deadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Signal sends sig and waits for the program to exit; it returns Wait's
// error (nil for exit status 0).
func (p *Proc) Signal(t testing.TB, sig os.Signal) error {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil && !p.Exited() {
		t.Fatalf("signalling %s: %v", p.Label, err)
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(Deadline):
		t.Fatalf("%s did not exit within %v of %v", p.Label, Deadline, sig)
		return nil
	}
}

// FreePort returns a loopback address whose port is free for TCP and UDP
// when asked. Another process may take it before the program binds it;
// callers that start a program on it retry on "address already in use".
func FreePort(t testing.TB) string {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		u, err := net.ListenPacket("udp", addr)
		l.Close()
		if err == nil {
			u.Close()
			return addr
		}
	}
	t.Fatal("no port free for both TCP and UDP")
	return ""
}

// Get returns the status and body of a GET of url, or 0 and the error
// text: for polling a program's /readyz and the like.
func Get(url string) (int, string) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Package newstd uses standard-library API that Go added after 1.13, next to
// older API that must pass: TestStdCheckerReports runs the cores' checker on
// it. Each "want:" comment lists what the checker must report on its line
// (symbol and the Go version that added it); nothing else may be reported.
package newstd

import (
	"errors"
	"io"
	"net"
	"net/netip" // want: "net/netip" go1.18
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// counter uses a type that Go 1.19 added.
type counter struct {
	n atomic.Uint64 // want: atomic.Uint64 go1.19
	p atomic.Value  // Go 1.4
	u uint64        // for atomic.AddUint64, Go 1.0
}

// Use calls each newer symbol once.
func Use(s string, r io.Reader, t time.Time) error {
	before, _, ok := strings.Cut(s, "=") // want: strings.Cut go1.18
	a, err := netip.ParseAddr(before)    // want: netip.ParseAddr go1.18
	if err != nil || !ok || !a.Is4() {   // want: netip.Addr.Is4 go1.18
		return err
	}
	var c counter
	c.n.Add(1) // want: atomic.Uint64.Add go1.19
	atomic.AddUint64(&c.u, 1)
	c.p.Store(s)
	if net.ParseIP(s).IsPrivate() { // want: net.IP.IsPrivate go1.17
		return errors.Join(io.EOF, io.ErrUnexpectedEOF) // want: errors.Join go1.20
	}
	var d net.Dialer
	if d.ControlContext != nil || d.Timeout > 0 { // want: net.Dialer.ControlContext go1.20
		return nil
	}
	b, err := io.ReadAll(r) // want: io.ReadAll go1.16
	if err != nil {
		return err
	}
	if _, err := os.ReadFile(string(b)); err != nil { // want: os.ReadFile go1.16
		// os.PathError has been an alias of io/fs.PathError since Go
		// 1.16; its fields are as old as os.
		var pe *os.PathError
		if errors.As(err, &pe) && pe.Op == "open" && strings.Index(pe.Path, "/") >= 0 {
			return pe.Err
		}
	}
	_ = t.UnixMilli() + t.Unix()     // want: time.Time.UnixMilli go1.17
	var last atomic.Pointer[counter] // want: atomic.Pointer go1.19
	last.Store(&c)                   // want: atomic.Pointer.Store go1.19
	return nil
}

package server

import (
	"errors"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"
)

// scriptedListener fails Accept with the scripted errors, then returns a
// connection.
type scriptedListener struct {
	net.Listener // nil: only Accept and Addr are called
	errs         []error
	conn         net.Conn
}

func (l *scriptedListener) Accept() (net.Conn, error) {
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		return nil, err
	}
	return l.conn, nil
}

func (l *scriptedListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53} }

func TestAcceptBacksOff(t *testing.T) {
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE} // Temporary
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cases := []struct {
		name      string
		errs      []error
		wantSleep []time.Duration
		wantErr   bool
	}{
		{"no error", nil, nil, false},
		{"descriptors exhausted for a while", []error{emfile, emfile, emfile, emfile, emfile, emfile, emfile, emfile, emfile},
			[]time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000}, false},
		{"a closed listener ends at once", []error{net.ErrClosed}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var slept []time.Duration
			l := acceptBackoff{Listener: &scriptedListener{errs: tc.errs, conn: a}, sleep: func(d time.Duration) { slept = append(slept, d/time.Millisecond) }}
			c, err := l.Accept()
			if (err != nil) != tc.wantErr || (err == nil && c != a) {
				t.Fatalf("Accept = %v, %v", c, err)
			}
			if tc.wantErr && !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Accept error %v, want the listener's own", err)
			}
			if !slices.Equal(slept, tc.wantSleep) {
				t.Fatalf("slept %v ms, want %v ms", slept, tc.wantSleep)
			}
		})
	}
}

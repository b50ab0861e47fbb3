// Command idleclients is the client side of test/hostile's
// TestWebhookIdleConnections: it opens --conns TLS keep-alive connections
// to --addr, sends one request on each and reads its answer, prints
// "OPENED <n>", and then waits until the server closes each one, at most
// until --idle plus --grace after the last was answered. It prints
// "RESULT never=<n> early=<n>": the connections the server did not close
// by then (or sent more on), and those it closed before half of --idle.
//
// It is its own program, built without the race detector, because 10,000
// TLS handshakes inside the race-instrumented test binary cost about 25 s
// of CPU, most of the test package's; the test still judges the counts.
package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "", "the server's host:port")
	conns := flag.Int("conns", 10000, "connections to open")
	idle := flag.Duration("idle", 12*time.Second, "the server's idle timeout")
	grace := flag.Duration("grace", 30*time.Second, "how long past --idle a close may come")
	flag.Parse()
	if *addr == "" || *conns <= 0 {
		fmt.Fprintln(os.Stderr, "idleclients: --addr and a positive --conns are required")
		os.Exit(2)
	}
	opened, err := open(*addr, *conns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "idleclients:", err)
		os.Exit(1)
	}
	fmt.Printf("OPENED %d\n", len(opened))
	never, early := waitClosed(opened, time.Now().Add(*idle+*grace), *idle/2)
	fmt.Printf("RESULT never=%d early=%d\n", never, early)
}

// idleConn is a keep-alive connection that has had its answer and sends
// nothing more.
type idleConn struct {
	conn     *tls.Conn
	answered time.Time
}

// workers open and then watch the connections; one goroutine per
// connection would do too, but this keeps the program's footprint small.
const workers = 32

// open opens n connections, each with one request answered, or returns
// the first failure.
func open(addr string, n int) ([]idleConn, error) {
	// The certificate is not what the test checks; plain X25519 keeps the
	// handshakes cheap (the default adds ML-KEM).
	cfg := &tls.Config{InsecureSkipVerify: true, CurvePreferences: []tls.CurveID{tls.X25519}}
	opened := make([]idleConn, n)
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				c, err := openOne(addr, cfg)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("connection %d: %w", i, err)
					}
					mu.Unlock()
					next.Store(int64(n)) // stop the others
					return
				}
				opened[i] = idleConn{conn: c, answered: time.Now()}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		for _, c := range opened {
			if c.conn != nil {
				c.conn.Close()
			}
		}
		return nil, firstErr
	}
	return opened, nil
}

// openOne opens a connection and has one request answered on it.
func openOne(addr string, cfg *tls.Config) (*tls.Conn, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: webhook\r\n\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// waitClosed waits until the server closes each connection or the
// deadline passes, and counts those it never closed and those it closed
// sooner than early after their answer. One deadline for all: every
// connection was answered by now, so the server must have closed each by
// now plus its timeout (a deadline from each answer would expire before
// its read on a loaded machine, where the opening outlasts the timeout,
// and hide a close already made).
func waitClosed(opened []idleConn, deadline time.Time, early time.Duration) (never, soon int64) {
	var nNever, nSoon atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1)
			for i := w; i < len(opened); i += workers {
				c := opened[i]
				_ = c.conn.SetReadDeadline(deadline)
				n, err := c.conn.Read(buf)
				closed := time.Now()
				c.conn.Close()
				switch {
				case n > 0 || err == nil, errors.Is(err, os.ErrDeadlineExceeded):
					nNever.Add(1) // the server sent something, or kept it open
				case closed.Sub(c.answered) < early:
					nSoon.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return nNever.Load(), nSoon.Load()
}

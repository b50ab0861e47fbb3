package upstream

import (
	"testing"
	"time"
)

// TestInflightWaitsForLateStarts: a prefetch may start from zero while Wait
// runs (shutdown during queries); Wait returns only when it is done.
func TestInflightWaitsForLateStarts(t *testing.T) {
	var f inflight
	f.wait() // nothing running: returns at once
	f.add()
	released := make(chan struct{})
	waited := make(chan struct{})
	go func() { f.wait(); close(waited) }()
	go func() {
		f.add() // a second start while Wait is blocked
		f.done()
		<-released
		f.done()
	}()
	select {
	case <-waited:
		t.Fatal("wait returned with a prefetch running")
	case <-time.After(20 * time.Millisecond):
	}
	close(released)
	<-waited
	if f.n != 0 {
		t.Fatalf("count %d after wait", f.n)
	}
}

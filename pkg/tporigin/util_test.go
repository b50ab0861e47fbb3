package tporigin

import (
	"runtime"
	"time"
)

// runtimeGosched waits a little for another goroutine without a deadline.
func runtimeGosched() {
	runtime.Gosched()
	time.Sleep(time.Millisecond)
}

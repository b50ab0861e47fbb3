package tporigin

import (
	"syscall"
	"testing"
	"time"
)

// cpuTimer reports a benchmark's CPU time per op (user+system of the whole
// process) next to ns/op. On the project's shared 2-core machine other
// processes stretch wall time; CPU time is what the code itself costs.
type cpuTimer struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuTimer { return cpuTimer{start: cpuNow()} }

func (c cpuTimer) report(b *testing.B) {
	b.ReportMetric(float64(cpuNow()-c.start)/float64(b.N), "cpu-ns/op")
}

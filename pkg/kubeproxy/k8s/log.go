package k8s

import (
	"fmt"

	"k8s.io/klog/v2"
)

// Logf writes one of the core's log lines (kubeproxy.Options.Logf) to klog
// at the default level. The core logs only what is worth seeing (input
// skipped as invalid) and formats its own lines, so they reach klog as
// messages.
func Logf(format string, args ...any) {
	klog.InfoDepth(1, fmt.Sprintf(format, args...))
}

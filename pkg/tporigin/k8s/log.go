package k8s

import (
	"fmt"

	"k8s.io/klog/v2"
)

// Logf writes one of the tracker's log lines to klog at the default level:
// set it as tporigin.Options.Logf. The core formats its own lines, so they
// reach klog as messages, not as structured key/value pairs.
func Logf(format string, args ...any) {
	klog.InfoDepth(1, fmt.Sprintf(format, args...))
}

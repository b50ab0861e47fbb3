package k8s

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
)

// Clock adapts a k8s.io/utils/clock Clock (the real one, or the fake of
// k8s.io/utils/clock/testing) to the Runner's clock: the core keeps its
// own two-method interface so that it needs no k8s.io module.
func Clock(c clock.Clock) kubeproxy.Clock { return utilsClock{c} }

type utilsClock struct{ c clock.Clock }

func (u utilsClock) Now() time.Time                           { return u.c.Now() }
func (u utilsClock) NewTimer(d time.Duration) kubeproxy.Timer { return u.c.NewTimer(d) }

package index

import "sync/atomic"

// atomicSnapshot is the single point where readers meet the writer.
type atomicSnapshot struct{ p atomic.Pointer[Snapshot] }

func (a *atomicSnapshot) Load() *Snapshot   { return a.p.Load() }
func (a *atomicSnapshot) Store(s *Snapshot) { a.p.Store(s) }

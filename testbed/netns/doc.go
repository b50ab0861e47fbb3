// Package netns builds throwaway Linux network namespaces for tpkit's
// NodeLocal tests: one namespace stands in for a node, so iptables rules,
// interface addresses and DNS traffic never touch the host.
//
// Invariants: every namespace has a unique name with the "tpk-" prefix and
// is deleted by the test's cleanup; code runs inside it either as a child
// process (`ip netns exec`) or on a locked OS thread (Do), which is switched
// back before it is released, so no other goroutine ever runs in the
// namespace by accident.
package netns

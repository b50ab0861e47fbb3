// Package testbin runs the module's programs as real processes for tests:
// Build compiles them (test/multi-tp, and any command's own end-to-end
// test), and AsMain with Command lets a command's test binary re-run itself
// as the program, for exit codes and signals without a build. LabPIDs and
// Cmdline read what hack/arktos-lab.sh started, for the suites that
// stop and restart real Arktos processes. Poll and Eventually are the one
// way a test or lab waits for a state it cannot be told about. It is the
// one place that finds the module root, calls the go tool, passes arguments
// to a re-run test binary and polls, so every such test does it the same
// way. Only tests import it.
package testbin

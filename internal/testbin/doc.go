// Package testbin builds the module's programs for tests that run them as
// real processes (test/multi-tp, and any command's own end-to-end test). It
// is the one place that finds the module root and calls the go tool, so
// every such test builds the same way. Only tests import it.
package testbin

package arktoslab

import (
	"fmt"
	"time"
)

// Checks runs a lab's named checks one after another, prints each verdict
// as the labs do ("CHECK <name> PASS (<time>)", or FAIL with what it saw),
// and keeps them for the summary. The zero value is ready; Width is the
// name column's width.
type Checks struct {
	Width   int
	start   time.Time
	total   int
	failed  []string
	started bool
}

// Run runs fn as the check called name, prints its verdict and returns its
// error, so that a caller can skip what depends on it.
func (c *Checks) Run(name string, fn func() error) error {
	if !c.started {
		c.start, c.started = time.Now(), true
	}
	start := time.Now()
	err := fn()
	c.total++
	took := time.Since(start).Round(100 * time.Millisecond)
	if err != nil {
		c.failed = append(c.failed, name)
		fmt.Printf("CHECK %-*s FAIL (%s): %v\n", c.Width, name, took, err)
		return err
	}
	fmt.Printf("CHECK %-*s PASS (%s)\n", c.Width, name, took)
	return nil
}

// Failed names the checks that failed, in order.
func (c *Checks) Failed() []string { return c.failed }

// Summary is the labs' last line: how many checks ran, for how long, and
// which failed.
func (c *Checks) Summary() string {
	return fmt.Sprintf("== %d checks in %s, failed: %v", c.total, time.Since(c.start).Round(time.Second), c.failed)
}

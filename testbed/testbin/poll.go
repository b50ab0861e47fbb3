/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package testbin

import (
	"testing"
	"time"
)

// Poll calls fn every interval until it returns nil or d has passed, and
// returns fn's last error: the one way tpkit's tests and labs wait for a
// state they cannot be told about.
func Poll(d, interval time.Duration, fn func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(interval)
	}
}

// EventuallyDeadline bounds Eventually. Like Deadline it only detects a
// hang, and it is longer: the race detector on a loaded machine slows a
// first sync of several fake TPs by far more than a program's start.
const EventuallyDeadline = 2 * time.Minute

// Eventually polls cond every 20 ms until it holds, failing t (with what
// was awaited) after EventuallyDeadline. cond runs on t's goroutine, so it
// may itself fail t when waiting makes no more sense (a program exited).
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	notYet := errNotYet(what)
	if Poll(EventuallyDeadline, 20*time.Millisecond, func() error {
		if cond() {
			return nil
		}
		return notYet
	}) != nil {
		t.Fatalf("timed out after %v waiting for %s", EventuallyDeadline, what)
	}
}

type errNotYet string

func (e errNotYet) Error() string { return "not yet: " + string(e) }

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
	"errors"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	n := 0
	if err := Poll(time.Minute, time.Millisecond, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("Poll: %v after %d calls, want nil after 3", err, n)
	}
	// Past the deadline Poll returns the last error (one call with d = 0).
	want := errors.New("never")
	calls := 0
	if err := Poll(0, time.Millisecond, func() error { calls++; return want }); err != want || calls != 1 {
		t.Fatalf("Poll past its deadline: %v after %d calls, want %v after 1", err, calls, want)
	}
}

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, "the third call", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}

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

package corelog

// Logger receives a core's log lines by level. The cores format their own
// lines; a Logger adds what its backend adds (time, source, verbosity).
type Logger interface {
	// Debugf is detail that repeats per object (a pod's DNS warnings):
	// for a verbose level.
	Debugf(format string, args ...interface{})
	// Infof is an event an operator may want (a database loaded,
	// compacted, pruned).
	Infof(format string, args ...interface{})
	// Warningf is input the core skipped, or a conflict it resolved.
	Warningf(format string, args ...interface{})
	// Errorf is a failure the core works around (a commit it retries).
	Errorf(format string, args ...interface{})
}

// Discard is the Logger that drops every line.
type Discard struct{}

// Debugf drops the line.
func (Discard) Debugf(string, ...interface{}) {}

// Infof drops the line.
func (Discard) Infof(string, ...interface{}) {}

// Warningf drops the line.
func (Discard) Warningf(string, ...interface{}) {}

// Errorf drops the line.
func (Discard) Errorf(string, ...interface{}) {}

// OrDiscard returns l, or Discard when l is nil: what a core does with the
// Logger of its Options.
func OrDiscard(l Logger) Logger {
	if l == nil {
		return Discard{}
	}
	return l
}

// Funcs is a Logger of printf-style functions, one per level; a nil one
// drops its level. klog v1 (Arktos), klog/v2 and testing.T.Logf fit it as
// they are (see the package doc).
type Funcs struct {
	Debug, Info, Warning, Error func(format string, args ...interface{})
}

// Debugf logs through f.Debug, if set.
func (f Funcs) Debugf(format string, args ...interface{}) { call(f.Debug, format, args) }

// Infof logs through f.Info, if set.
func (f Funcs) Infof(format string, args ...interface{}) { call(f.Info, format, args) }

// Warningf logs through f.Warning, if set.
func (f Funcs) Warningf(format string, args ...interface{}) { call(f.Warning, format, args) }

// Errorf logs through f.Error, if set.
func (f Funcs) Errorf(format string, args ...interface{}) { call(f.Error, format, args) }

func call(fn func(string, ...interface{}), format string, args []interface{}) {
	if fn != nil {
		fn(format, args...)
	}
}

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

import (
	"fmt"
	"reflect"
	"testing"
)

func TestFuncsRouteByLevel(t *testing.T) {
	var got []string
	rec := func(level string) func(string, ...interface{}) {
		return func(format string, args ...interface{}) { got = append(got, level+" "+fmt.Sprintf(format, args...)) }
	}
	var l Logger = Funcs{Debug: rec("D"), Info: rec("I"), Warning: rec("W"), Error: rec("E")}
	l.Debugf("a %d", 1)
	l.Infof("b %s", "x")
	l.Warningf("c")
	l.Errorf("d %v", fmt.Errorf("e"))
	if want := []string{"D a 1", "I b x", "W c", "E d e"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	// A level left nil is dropped; the others still log.
	got = nil
	l = Funcs{Warning: rec("W")}
	l.Debugf("x")
	l.Infof("x")
	l.Errorf("x")
	l.Warningf("y")
	if want := []string{"W y"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestOrDiscard(t *testing.T) {
	if _, ok := OrDiscard(nil).(Discard); !ok {
		t.Fatal("OrDiscard(nil) is not Discard")
	}
	if _, ok := OrDiscard(Funcs{}).(Funcs); !ok {
		t.Fatal("OrDiscard replaced a set Logger")
	}
	d := OrDiscard(nil)
	d.Debugf("x")
	d.Infof("x")
	d.Warningf("x")
	d.Errorf("x")
}

// A test's t.Logf fits Funcs as it is.
var _ = Funcs{Info: (&testing.T{}).Logf}

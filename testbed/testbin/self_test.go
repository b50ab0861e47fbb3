package testbin

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	AsMain("echo-args", func() { fmt.Printf("%q", os.Args) })
	os.Exit(m.Run())
}

func TestCommandRunsAsMain(t *testing.T) {
	for _, args := range [][]string{nil, {"a b", "", "--x=1"}} {
		out, err := Command(args...).Output()
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		want := fmt.Sprintf("%q", append([]string{"echo-args"}, args...))
		if args == nil {
			want = fmt.Sprintf("%q", []string{"echo-args"})
		}
		if got := string(out); !reflect.DeepEqual(got, want) || strings.Contains(got, "PASS") {
			t.Errorf("%q: the program saw %s, want %s", args, got, want)
		}
	}
}

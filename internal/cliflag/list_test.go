package cliflag

import (
	"flag"
	"reflect"
	"testing"
)

func TestSplitList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"a", []string{"a"}},
		{" a , b,,c ", []string{"a", "b", "c"}},
	} {
		if got := SplitList(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestListFlagReplaces(t *testing.T) {
	def := []string{"default"}
	l := List(def)
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var(&l, "l", "")
	if err := fs.Parse([]string{"-l", "a,b", "-l", " c ,"}); err != nil {
		t.Fatal(err)
	}
	if want := (List{"c"}); !reflect.DeepEqual(l, want) {
		t.Errorf("list = %q, want %q", l, want)
	}
	if l.String() != "c" {
		t.Errorf("String() = %q", l.String())
	}
	if def[0] != "default" {
		t.Errorf("the default's backing array was overwritten: %q", def)
	}
}

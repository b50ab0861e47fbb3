package cliflag

import "strings"

// SplitList splits a comma-separated list, trimming each item and dropping
// empty ones. It returns nil when no item is left.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// List is a flag.Value for a comma-separated list (see SplitList). Each use
// of the flag replaces the list, including its default.
type List []string

// String implements flag.Value.
func (l *List) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value.
func (l *List) Set(v string) error {
	*l = SplitList(v)
	return nil
}

// Type names the value in --help, as pflag's string lists do.
func (l *List) Type() string { return "strings" }

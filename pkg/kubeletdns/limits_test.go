package kubeletdns

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const searchWarning = "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: "

func TestFitSearches(t *testing.T) {
	// 2048 = 128 + 15*127 characters + 15 spaces.
	list2048 := []string{strings.Repeat("A", 128)}
	for range 15 {
		list2048 = append(list2048, strings.Repeat("A", 127))
	}
	numbered := func(n int) []string {
		out := []string{"testNS.svc.TEST", "svc.TEST", "TEST"}
		for i := 4; i <= n; i++ {
			out = append(out, strconv.Itoa(i))
		}
		return out
	}
	long256 := strings.Repeat("B", 256)

	cases := []struct {
		name    string
		limits  Limits
		in      []string
		want    []string
		warning string // the applied line, "" for no warning
	}{
		{"legacy: 3 paths", LegacyLimits, numbered(3), numbered(3), ""},
		{"legacy: 5 paths", LegacyLimits, []string{"testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB"}, []string{"testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB"}, ""},
		{"legacy: 6 paths", LegacyLimits, numbered(6), numbered(6), ""},
		{"legacy: 7 paths keep 6", LegacyLimits,
			[]string{"testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB", "CCC", "DDD"},
			[]string{"testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB", "CCC"},
			"testNS.svc.TEST svc.TEST TEST AAA BBB CCC"},
		{"legacy: a 256-character path is dropped", LegacyLimits,
			[]string{"testNS.svc.TEST", "svc.TEST", "TEST", "AAA", long256, "BBB"},
			[]string{"testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB"},
			"testNS.svc.TEST svc.TEST TEST AAA BBB"},
		{"legacy: over 256 characters cut from the end", LegacyLimits,
			[]string{strings.Repeat("a", 100), strings.Repeat("b", 100), strings.Repeat("c", 100)},
			[]string{strings.Repeat("a", 100), strings.Repeat("b", 100)},
			strings.Repeat("a", 100) + " " + strings.Repeat("b", 100)},
		{"legacy: exactly 256 characters kept", LegacyLimits,
			[]string{strings.Repeat("a", 127), strings.Repeat("b", 128)},
			[]string{strings.Repeat("a", 127), strings.Repeat("b", 128)}, ""},

		{"expanded: 2048 characters kept", ExpandedLimits, list2048, list2048, ""},
		{"expanded: 2050 characters cut", ExpandedLimits, append(append([]string(nil), list2048...), "B"), list2048, strings.Join(list2048, " ")},
		{"expanded: a 256-character path is dropped", ExpandedLimits,
			[]string{"testNS.svc.TEST", "svc.TEST", "TEST", "AAA", long256, "BBB"},
			[]string{"testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB"},
			"testNS.svc.TEST svc.TEST TEST AAA BBB"},
		{"expanded: a 253-character path is kept", ExpandedLimits, []string{strings.Repeat("x", 253)}, []string{strings.Repeat("x", 253)}, ""},
		{"expanded: a 254-character path is dropped", ExpandedLimits, []string{"a", strings.Repeat("x", 254), "b"}, []string{"a", "b"}, "a b"},
		{"expanded: 32 paths", ExpandedLimits, numbered(32), numbered(32), ""},
		{"expanded: 33 paths keep 32", ExpandedLimits, numbered(33), numbered(32), strings.Join(numbered(32), " ")},
		{"expanded: every path too long", ExpandedLimits, []string{long256, long256}, []string{}, ""},
		{"empty", ExpandedLimits, nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]string(nil), tc.in...)
			got, w := fitSearches(in, tc.limits)
			if len(got) != len(tc.want) || (len(got) > 0 && !reflect.DeepEqual(got, tc.want)) {
				t.Errorf("searches = %q, want %q", got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.in) {
				t.Errorf("input modified: %q", in)
			}
			wantWarn := tc.warning != "" || (len(tc.in) > len(tc.want))
			switch {
			case !wantWarn && w != nil:
				t.Errorf("unexpected warning %v", *w)
			case wantWarn && w == nil:
				t.Errorf("no warning, want one")
			case wantWarn && (w.Reason != ReasonDNSConfigForming || w.Message != searchWarning+tc.warning):
				t.Errorf("warning = %v, want %s: %s%s", *w, ReasonDNSConfigForming, searchWarning, tc.warning)
			}
		})
	}
}

func TestFitNameservers(t *testing.T) {
	cases := []struct {
		name string
		in   []string
		want []string
		warn bool
	}{
		{"one", []string{"127.0.0.1"}, []string{"127.0.0.1"}, false},
		{"three", []string{"127.0.0.1", "10.0.0.10", "8.8.8.8"}, []string{"127.0.0.1", "10.0.0.10", "8.8.8.8"}, false},
		{"four trimmed to three", []string{"127.0.0.1", "10.0.0.10", "8.8.8.8", "1.2.3.4"}, []string{"127.0.0.1", "10.0.0.10", "8.8.8.8"}, true},
		{"none", nil, nil, false},
	}
	for _, limits := range []Limits{ExpandedLimits, LegacyLimits} {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got, w := fitNameservers(tc.in, limits)
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("nameservers = %q, want %q", got, tc.want)
				}
				if (w != nil) != tc.warn {
					t.Fatalf("warning = %v, want one: %v", w, tc.warn)
				}
				if w != nil {
					want := "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 127.0.0.1 10.0.0.10 8.8.8.8"
					if w.Reason != ReasonDNSConfigForming || w.Message != want {
						t.Errorf("warning = %v, want %s: %s", *w, ReasonDNSConfigForming, want)
					}
				}
			})
		}
	}
}

// naiveFitSearches is the search-limit rule written the obvious way, with
// strings.Join, as a reference for fitSearches.
func naiveFitSearches(in []string, l Limits) []string {
	out := append([]string(nil), in...)
	if len(out) > l.MaxSearchPaths {
		out = out[:l.MaxSearchPaths]
	}
	var kept []string
	for _, s := range out {
		if len(s) <= l.MaxSearchPathLength {
			kept = append(kept, s)
		}
	}
	for len(kept) > 0 && len(strings.Join(kept, " ")) > l.MaxSearchListChars {
		kept = kept[:len(kept)-1]
	}
	return kept
}

func TestFitSearchesMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		n := rng.IntN(40)
		in := make([]string, n)
		for j := range in {
			// Mostly short, sometimes near or over the per-path limit.
			size := 1 + rng.IntN(40)
			if rng.IntN(8) == 0 {
				size = 240 + rng.IntN(20)
			}
			in[j] = strings.Repeat(string(rune('a'+j%26)), size)
		}
		limits := ExpandedLimits
		if i%2 == 1 {
			limits = LegacyLimits
		}
		got, w := fitSearches(in, limits)
		want := naiveFitSearches(in, limits)
		if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("fitSearches(%d paths, %+v) = %d paths, want %d", n, limits, len(got), len(want))
		}
		if changed := !reflect.DeepEqual(append([]string{}, got...), append([]string{}, in...)); changed != (w != nil) {
			t.Fatalf("changed=%v but warning=%v", changed, w)
		}
	}
}

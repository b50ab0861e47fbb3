package kubeletdns

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseResolvConf(t *testing.T) {
	none := []string{}
	cases := []struct {
		name        string
		data        string
		nameservers []string
		searches    []string
		options     []string
		wantErr     string
	}{
		// Blank input and comments.
		{"empty", "", none, none, none, ""},
		{"space", " ", none, none, none, ""},
		{"newline", "\n", none, none, none, ""},
		{"tabs", "\t\n\t", none, none, none, ""},
		{"comment", "#comment\n", none, none, none, ""},
		{"indented comment", " #comment\n", none, none, none, ""},
		{"two comments", "#comment\n#comment", none, none, none, ""},
		{"comment then unknown word", "#comment\nnameserver 1.2.3.4\n#comment\nsearch foo\ncomment", []string{"1.2.3.4"}, []string{"foo"}, none, ""},
		{"commented nameserver", "# nameserver 9.9.9.9\nnameserver 1.2.3.4", []string{"1.2.3.4"}, none, none, ""},
		{"CRLF line ends", "nameserver 1.2.3.4\r\nsearch foo\r\n", []string{"1.2.3.4"}, []string{"foo"}, none, ""},
		{"other keywords ignored", "domain example.com\nsortlist 10.0.0.0/8\nnameserver 1.2.3.4", []string{"1.2.3.4"}, none, none, ""},

		// Nameservers add up; one without an address is an error.
		{"nameserver without address", "#comment\nnameserver", none, none, none, "nameserver line has no address"},
		{"nameserver and search without values", "#comment\nnameserver\nsearch", none, none, none, "line 2"},
		{"nameserver then empty search", "#comment\nnameserver 1.2.3.4\nsearch", []string{"1.2.3.4"}, none, none, ""},
		{"nameserver", "nameserver 1.2.3.4", []string{"1.2.3.4"}, none, none, ""},
		{"leading space", " nameserver 1.2.3.4", []string{"1.2.3.4"}, none, none, ""},
		{"leading tab", "\tnameserver 1.2.3.4", []string{"1.2.3.4"}, none, none, ""},
		{"tab separator", "nameserver\t1.2.3.4", []string{"1.2.3.4"}, none, none, ""},
		{"mixed separator", "nameserver \t 1.2.3.4", []string{"1.2.3.4"}, none, none, ""},
		{"two nameservers", "nameserver 1.2.3.4\nnameserver 5.6.7.8", []string{"1.2.3.4", "5.6.7.8"}, none, none, ""},
		{"trailing comment", "nameserver 1.2.3.4 #comment", []string{"1.2.3.4"}, none, none, ""},
		{"IPv6 nameserver", "nameserver fd00::10", []string{"fd00::10"}, none, none, ""},

		// The last search line wins; trailing dots are trimmed, "." is kept.
		{"empty search", "search ", none, none, none, ""},
		{"search", "search foo", none, []string{"foo"}, none, ""},
		{"two searches", "search foo bar", none, []string{"foo", "bar"}, none, ""},
		{"trailing dot", "search foo. bar", none, []string{"foo", "bar"}, none, ""},
		{"two trailing dots are kept for Validate to name", "search 0.. foo...", none, []string{"0..", "foo..."}, none, ""},
		{"three and newline", "search foo bar bat\n", none, []string{"foo", "bar", "bat"}, none, ""},
		{"last search wins", "search foo\nsearch bar", none, []string{"bar"}, none, ""},
		{"empty last search wins", "search foo\nsearch", none, none, none, ""},
		{"root search kept", "search .", none, []string{"."}, none, ""},
		{"root among others", "search foo. . bar.", none, []string{"foo", ".", "bar"}, none, ""},
		{"nameserver and search", "nameserver 1.2.3.4\nsearch foo bar", []string{"1.2.3.4"}, []string{"foo", "bar"}, none, ""},
		{"interleaved", "nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar", []string{"1.2.3.4", "5.6.7.8"}, []string{"bar"}, none, ""},

		// Options merge across lines by name.
		{"empty options", "options ", none, none, none, ""},
		{"options", "options ndots:5 attempts:2", none, none, []string{"ndots:5", "attempts:2"}, ""},
		{"later value wins", "options ndots:1\noptions ndots:5 attempts:3", none, none, []string{"ndots:5", "attempts:3"}, ""},
		{"options add up", "options ndots:1\noptions attempts:3", none, none, []string{"ndots:1", "attempts:3"}, ""},
		{"flag options add up", "options ndots:1 attempts:3\noptions debug", none, none, []string{"ndots:1", "attempts:3", "debug"}, ""},
		{"same line duplicate", "options ndots:1 ndots:2", none, none, []string{"ndots:2"}, ""},
		{"value replaces flag", "options debug\noptions debug:2 edns0", none, none, []string{"debug:2", "edns0"}, ""},
		{"everything", "nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar\noptions ndots:5 attempts:4", []string{"1.2.3.4", "5.6.7.8"}, []string{"bar"}, []string{"ndots:5", "attempts:4"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := ParseResolvConf(strings.NewReader(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(rc.Nameservers, tc.nameservers) {
				t.Errorf("nameservers = %q, want %q", rc.Nameservers, tc.nameservers)
			}
			if !reflect.DeepEqual(rc.Searches, tc.searches) {
				t.Errorf("searches = %q, want %q", rc.Searches, tc.searches)
			}
			if !reflect.DeepEqual(rc.Options, tc.options) {
				t.Errorf("options = %q, want %q", rc.Options, tc.options)
			}
		})
	}
}

func TestParseResolvConfTooLarge(t *testing.T) {
	big := bytes.Repeat([]byte("# padding line\n"), MaxResolvConfSize/15+1)
	if _, err := ParseResolvConf(bytes.NewReader(big)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("error = %v, want a size error", err)
	}
	exact := bytes.Repeat([]byte("#"), MaxResolvConfSize)
	if _, err := ParseResolvConf(bytes.NewReader(exact)); err != nil {
		t.Fatalf("a file of exactly %d bytes: %v", MaxResolvConfSize, err)
	}
}

func TestFormat(t *testing.T) {
	cases := []struct {
		name    string
		rc      ResolvConf
		want    string
		wantErr string
	}{
		{"empty", ResolvConf{}, "", ""},
		{"full", ResolvConf{
			Nameservers: []string{"10.0.0.10", "fd00::a"},
			Searches:    []string{"bar.baz.svc.cluster.local", "baz.svc.cluster.local", "svc.cluster.local", "cluster.local"},
			Options:     []string{"ndots:6", "edns0"},
		}, "nameserver 10.0.0.10\nnameserver fd00::a\nsearch bar.baz.svc.cluster.local baz.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:6 edns0\n", ""},
		{"root search", ResolvConf{Nameservers: []string{"127.0.0.1"}, Searches: []string{"."}}, "nameserver 127.0.0.1\nsearch .\n", ""},
		{"trailing dot and underscore", ResolvConf{Searches: []string{"_srv.Example.COM."}}, "search _srv.Example.COM.\n", ""},
		{"options only", ResolvConf{Options: []string{"ndots:2"}}, "options ndots:2\n", ""},

		{"nameserver not an IP", ResolvConf{Nameservers: []string{"dns.example.com"}}, "", "not an IP address"},
		{"newline in nameserver", ResolvConf{Nameservers: []string{"1.2.3.4\nsearch evil"}}, "", "not an IP address"},
		{"newline in search", ResolvConf{Searches: []string{"foo\nnameserver 6.6.6.6"}}, "", "contains '\\n'"},
		{"space in search", ResolvConf{Searches: []string{"foo bar"}}, "", "contains ' '"},
		{"comment in search", ResolvConf{Searches: []string{"#foo"}}, "", "contains '#'"},
		{"empty search", ResolvConf{Searches: []string{""}}, "", "must not be empty"},
		{"empty label", ResolvConf{Searches: []string{"foo..bar"}}, "", "empty label"},
		{"leading dot", ResolvConf{Searches: []string{".foo"}}, "", "empty label"},
		{"two trailing dots", ResolvConf{Searches: []string{"foo.."}}, "", "empty label"},
		{"unicode in search", ResolvConf{Searches: []string{"bücher.de"}}, "", "contains"},
		{"empty option", ResolvConf{Options: []string{""}}, "", "must not be empty"},
		{"option without name", ResolvConf{Options: []string{":5"}}, "", "empty name"},
		{"newline in option", ResolvConf{Options: []string{"ndots:5\nnameserver"}}, "", "contains '\\n'"},
		{"semicolon in option", ResolvConf{Options: []string{"a;b"}}, "", "contains ';'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.rc.Format()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if got != nil {
					t.Fatalf("wrote %q despite the error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if string(got) != tc.want {
				t.Fatalf("Format() =\n%s\nwant\n%s", got, tc.want)
			}
			back, err := ParseResolvConf(bytes.NewReader(got))
			if err != nil {
				t.Fatalf("parsing the formatted file: %v", err)
			}
			if !sameResolvConf(back, canonical(tc.rc)) {
				t.Fatalf("round trip = %+v, want %+v", back, tc.rc)
			}
		})
	}
}

// canonical is what parsing rc's formatted form gives back: the parser trims
// a trailing dot from every search domain but ".".
func canonical(rc ResolvConf) ResolvConf {
	out := ResolvConf{Nameservers: rc.Nameservers, Options: rc.Options}
	for _, s := range rc.Searches {
		if s != "." {
			s = strings.TrimSuffix(s, ".")
		}
		out.Searches = append(out.Searches, s)
	}
	return out
}

// sameResolvConf compares, treating nil and empty slices alike.
func sameResolvConf(a, b ResolvConf) bool {
	eq := func(x, y []string) bool { return len(x) == len(y) && (len(x) == 0 || reflect.DeepEqual(x, y)) }
	return eq(a.Nameservers, b.Nameservers) && eq(a.Searches, b.Searches) && eq(a.Options, b.Options)
}

func TestParseResolvConfReadError(t *testing.T) {
	_, err := ParseResolvConf(iotest.ErrReader(errors.New("disk on fire")))
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("error = %v", err)
	}
}

func TestErrorsClipHugeInput(t *testing.T) {
	_, err := ResolvConf{Searches: []string{strings.Repeat("a", 1000) + " b"}}.Format()
	if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), "...") {
		t.Fatalf("error = %v", err)
	}
	if w := (Warning{Reason: "R", Message: "m"}); w.String() != "R: m" {
		t.Fatalf("Warning.String() = %q", w.String())
	}
}

// TestIsIPMatchesNetip: a nameserver is an address exactly when
// net/netip.ParseAddr reads it, zones included (isIP is written without
// net/netip, which is newer than the core's Go 1.13).
func TestIsIPMatchesNetip(t *testing.T) {
	for _, s := range []string{
		"10.0.0.10", "1.2.3.4", "256.0.0.1", "010.0.0.1", "1.2.3", "", "%", "%eth0",
		"fd00::10", "::1", "::ffff:10.0.0.1", "fe80::1%eth0", "fe80::1%", "fe80::1%eth0%1", "fe80::1%eth 0",
		"::ffff:1.2.3.4%eth0", "1.2.3.4%eth0", "00001::", "1::2::3", "nameserver", "[::1]",
	} {
		_, err := netip.ParseAddr(s)
		if got, want := isIP(s), err == nil; got != want {
			t.Errorf("isIP(%q) = %v, net/netip says %v (%v)", s, got, want, err)
		}
	}
}

package kubednsconfig

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string]string
		want Config
		err  string // a part of the error; "" for none
	}{
		{name: "empty", data: nil},
		{name: "other keys are ignored", data: map[string]string{"Corefile": ".:53 {}", "stubDomains": "  "}},
		{name: "stub domains and upstreams", data: map[string]string{
			"stubDomains":         `{"Acme.Local": ["1.2.3.4", "5.6.7.8:5353"], "b.example": ["fd00::1", "[fd00::2]:54"]}`,
			"upstreamNameservers": `["8.8.8.8", "8.8.4.4:53"]`,
		}, want: Config{
			StubDomains: []StubDomain{{Domain: "acme.local.", Servers: []string{"1.2.3.4:53", "5.6.7.8:5353"}}, {Domain: "b.example.", Servers: []string{"[fd00::1]:53", "[fd00::2]:54"}}},
			Upstreams:   []string{"8.8.8.8:53", "8.8.4.4:53"},
		}},
		{name: "a fully qualified domain", data: map[string]string{"stubDomains": `{"acme.local.": ["1.2.3.4"]}`},
			want: Config{StubDomains: []StubDomain{{Domain: "acme.local.", Servers: []string{"1.2.3.4:53"}}}}},
		{name: "stubDomains not a map", data: map[string]string{"stubDomains": `["1.2.3.4"]`}, err: "stubDomains: not a JSON map"},
		{name: "stub without servers", data: map[string]string{"stubDomains": `{"acme.local": []}`}, err: `"acme.local" has no nameserver`},
		{name: "stub nameserver a name", data: map[string]string{"stubDomains": `{"acme.local": ["ns.acme.local"]}`}, err: `nameserver "ns.acme.local": not an IP address`},
		{name: "stub root", data: map[string]string{"stubDomains": `{".": ["1.2.3.4"]}`}, err: "upstreamNameservers gives"},
		{name: "stub bad domain", data: map[string]string{"stubDomains": `{"a..b": ["1.2.3.4"]}`}, err: `"a..b" is not a domain name`},
		{name: "stub given twice", data: map[string]string{"stubDomains": `{"acme.local": ["1.2.3.4"], "ACME.local.": ["1.2.3.5"]}`}, err: "given twice"},
		{name: "port zero", data: map[string]string{"upstreamNameservers": `["1.2.3.4:0"]`}, err: "not an IP address"},
		{name: "zone in an address", data: map[string]string{"upstreamNameservers": `["fe80::1%eth0"]`}, err: "not an IP address"},
		{name: "four upstreams", data: map[string]string{"upstreamNameservers": `["1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"]`}, err: "4 nameservers, at most 3"},
		{name: "upstreams not a list", data: map[string]string{"upstreamNameservers": `"1.1.1.1"`}, err: "upstreamNameservers: not a JSON list"},
		{name: "federations", data: map[string]string{"federations": "abc=def.com"}, err: "federations: not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.data)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				if !got.IsZero() {
					t.Errorf("a config with the error: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// FuzzParse: any data gives a config or an error, never a panic, and a
// config's domains are fully qualified and its servers host:port.
func FuzzParse(f *testing.F) {
	f.Add(`{"acme.local": ["1.2.3.4"]}`, `["8.8.8.8"]`)
	f.Add(`{"": [""]}`, `[]`)
	f.Add(`{"a.b": ["[::1]:53"]}`, `["1.1.1.1:5353", "::1"]`)
	f.Fuzz(func(t *testing.T, stubs, ups string) {
		c, err := Parse(map[string]string{KeyStubDomains: stubs, KeyUpstreamNameservers: ups})
		if err != nil {
			return
		}
		for _, s := range c.StubDomains {
			if !strings.HasSuffix(s.Domain, ".") || len(s.Servers) == 0 {
				t.Fatalf("stub %+v", s)
			}
			for _, hp := range s.Servers {
				if _, err := Nameserver(hp); err != nil {
					t.Fatalf("server %q: %v", hp, err)
				}
			}
		}
		if len(c.Upstreams) > MaxUpstreams {
			t.Fatalf("%d upstreams", len(c.Upstreams))
		}
	})
}

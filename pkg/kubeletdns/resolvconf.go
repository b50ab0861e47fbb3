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

package kubeletdns

import (
	"bytes"
	"fmt"
	"io"
	"io/ioutil"
	"strings"

	"github.com/tpkit-dev/tpkit/pkg/ipaddr"
)

// MaxResolvConfSize bounds how much of a host resolv.conf is read, as upstream
// kubelet does (10 MiB): a larger file is an error, not a partial read.
const MaxResolvConfSize = 10 << 20

// ResolvConf is the content of a resolv.conf file: the three keywords kubelet
// manages. Each option is one token, "name" or "name:value".
type ResolvConf struct {
	Nameservers []string
	Searches    []string
	Options     []string
}

// ParseResolvConf reads a host resolv.conf the way upstream kubelet does:
//   - lines whose first non-blank character is '#' are comments;
//   - "nameserver" lines add up, each giving its first address; a
//     nameserver line without an address is an error;
//   - the last "search" line wins; a trailing dot is trimmed from every
//     domain except the root domain "." and a domain ending in two dots
//     (an empty label), which are kept as they are;
//   - "options" merge across lines by name, a later value replacing an
//     earlier one in place.
//
// Other keywords (domain, sortlist, ...) are ignored. On error the result
// still holds everything that parsed, so a caller may report both.
// The returned slices are never nil.
func ParseResolvConf(r io.Reader) (ResolvConf, error) {
	// ioutil.ReadAll is io.ReadAll (Go 1.16) under its Go 1.13 name.
	data, err := ioutil.ReadAll(io.LimitReader(r, MaxResolvConfSize+1))
	if err != nil {
		return ResolvConf{}, fmt.Errorf("reading resolv.conf: %w", err)
	}
	if len(data) > MaxResolvConfSize {
		return ResolvConf{}, fmt.Errorf("resolv.conf is larger than %d bytes", MaxResolvConfSize)
	}
	return parseResolvConf(data)
}

func parseResolvConf(data []byte) (ResolvConf, error) {
	rc := ResolvConf{Nameservers: []string{}, Searches: []string{}, Options: []string{}}
	var errs []error
	// optIndex finds an option by name in rc.Options, so a file with many
	// options parses in linear time.
	var optIndex map[string]int
	lineNo := 0
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		lineNo++
		fields := strings.Fields(string(line))
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) < 2 {
				errs = append(errs, fmt.Errorf("resolv.conf line %d: nameserver line has no address", lineNo))
				continue
			}
			rc.Nameservers = append(rc.Nameservers, fields[1])
		case "search":
			rc.Searches = make([]string, 0, len(fields)-1)
			for _, s := range fields[1:] {
				// The same domain with and without its trailing dot counts
				// once, so it does not eat into the search limits twice.
				// "." alone is the root domain: trimming it would leave an
				// empty entry and an unparsable "search " line. A name with
				// two trailing dots has an empty label: trimming one would
				// make it look valid and change it again on the next read,
				// so it stays as it is and Validate names it.
				if s != "." && !strings.HasSuffix(s, "..") {
					s = strings.TrimSuffix(s, ".")
				}
				rc.Searches = append(rc.Searches, s)
			}
		case "options":
			for _, tok := range fields[1:] {
				name := optionName(tok)
				if i, ok := optIndex[name]; ok {
					rc.Options[i] = tok
					continue
				}
				if optIndex == nil {
					optIndex = make(map[string]int)
				}
				optIndex[name] = len(rc.Options)
				rc.Options = append(rc.Options, tok)
			}
		}
	}
	if len(errs) == 0 {
		return rc, nil
	}
	return rc, lineErrors(errs)
}

// lineErrors are all the bad lines of one file, reported together so that
// fixing one does not merely reveal the next: the messages one a line, as
// errors.Join gives them. errors.Join, and an Unwrap() []error that go vet
// accepts, are newer than the oldest Go the cores build with; no caller
// needs to match a line's error.
type lineErrors []error

func (e lineErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "\n")
}

// optionName is the part of an option token before the first ':'.
func optionName(tok string) string {
	if i := strings.IndexByte(tok, ':'); i >= 0 {
		return tok[:i]
	}
	return tok
}

// setOption replaces the option called name in opts with tok, or appends
// tok. It scans: pod dnsConfig options are few.
func setOption(opts []string, name, tok string) []string {
	for i, o := range opts {
		if optionName(o) == name {
			opts[i] = tok
			return opts
		}
	}
	return append(opts, tok)
}

// Validate reports the first entry of rc that cannot be written to a
// resolv.conf file without changing its meaning: a nameserver that is not an
// IP address, a search domain that is not a domain name (or "."), or an
// option that is empty or holds blanks or comment characters.
func (rc ResolvConf) Validate() error {
	for i, ns := range rc.Nameservers {
		if err := validateNameserver(ns); err != nil {
			return fmt.Errorf("nameserver %d: %w", i, err)
		}
	}
	for i, s := range rc.Searches {
		if err := validateSearch(s); err != nil {
			return fmt.Errorf("search path %d: %w", i, err)
		}
	}
	for i, o := range rc.Options {
		if err := validateOption(o); err != nil {
			return fmt.Errorf("option %d: %w", i, err)
		}
	}
	return nil
}

func validateNameserver(ns string) error {
	if !isIP(ns) {
		return fmt.Errorf("%q is not an IP address", clip(ns))
	}
	return nil
}

// isIP reports whether s is an IP address as net/netip.ParseAddr reads it:
// an IPv6 address may carry a zone ("fe80::1%eth0"), which resolv.conf
// allows for a link-local nameserver.
func isIP(s string) bool {
	addr, zoned := s, false
	if i := strings.IndexByte(s, '%'); i >= 0 {
		if i == len(s)-1 {
			return false // an empty zone
		}
		addr, zoned = s[:i], true
	}
	a, err := ipaddr.ParseAddr(addr)
	return err == nil && (!zoned || a.Is6())
}

// validateSearch accepts "." and names made of labels of letters, digits,
// '-' and '_' separated by single dots, with at most one trailing dot. It is
// looser than the API server's DNS-1123 check (host files may use upper case
// and '_'), but nothing it accepts can break a resolv.conf line.
func validateSearch(s string) error {
	if s == "." {
		return nil
	}
	name := strings.TrimSuffix(s, ".")
	if name == "" {
		return fmt.Errorf("search path must not be empty")
	}
	prevDot := true // a leading dot is an empty label
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '.':
			if prevDot {
				return fmt.Errorf("search path %q has an empty label", clip(s))
			}
			prevDot = true
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return fmt.Errorf("search path %q contains %q: use letters, digits, '-', '_' and '.'", clip(s), rune(c))
		}
		prevDot = false
	}
	if prevDot { // "foo.." : an empty label before the trailing dot
		return fmt.Errorf("search path %q has an empty label", clip(s))
	}
	return nil
}

// validateOption accepts a non-empty name optionally followed by ':' and a
// value, all printable ASCII without blanks, '#' or ';'.
func validateOption(o string) error {
	if o == "" {
		return fmt.Errorf("option must not be empty")
	}
	if optionName(o) == "" {
		return fmt.Errorf("option %q has an empty name", clip(o))
	}
	for i := 0; i < len(o); i++ {
		if c := o[i]; c <= ' ' || c >= 0x7f || c == '#' || c == ';' {
			return fmt.Errorf("option %q contains %q", clip(o), rune(c))
		}
	}
	return nil
}

// Format renders rc as resolv.conf content: one "nameserver" line per
// server, then one "search" line and one "options" line when they have
// entries. It validates rc first, so it never writes a line that a resolver
// would read differently (no injected newline, blank or comment).
func (rc ResolvConf) Format() ([]byte, error) {
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("refusing to write resolv.conf: %w", err)
	}
	var b bytes.Buffer
	b.Grow(rc.formattedLen())
	for _, ns := range rc.Nameservers {
		b.WriteString("nameserver ")
		b.WriteString(ns)
		b.WriteByte('\n')
	}
	writeLine(&b, "search", rc.Searches)
	writeLine(&b, "options", rc.Options)
	return b.Bytes(), nil
}

func writeLine(b *bytes.Buffer, keyword string, toks []string) {
	if len(toks) == 0 {
		return
	}
	b.WriteString(keyword)
	for _, t := range toks {
		b.WriteByte(' ')
		b.WriteString(t)
	}
	b.WriteByte('\n')
}

func (rc ResolvConf) formattedLen() int {
	n := 0
	for _, ns := range rc.Nameservers {
		n += len("nameserver \n") + len(ns)
	}
	for _, s := range rc.Searches {
		n += len(s) + 1
	}
	for _, o := range rc.Options {
		n += len(o) + 1
	}
	return n + len("search\noptions\n")
}

// clip keeps error messages readable when the input is huge.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

package cliflag

import "testing"

func TestValidateListenAddress(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{":53", true}, {"127.0.0.1:0", true}, {"[::1]:8080", true}, {"localhost:9153", true}, {"0.0.0.0:53", true},
		{"53", false}, {"", false}, {":", false}, {":65536", false}, {":-1", false}, {"300.1.1.1:53", false},
		{"bad_host:53", false}, {"[::1]", false}, {"a..b:53", false},
	} {
		if err := ValidateListenAddress(tc.addr); (err == nil) != tc.ok {
			t.Errorf("ValidateListenAddress(%q) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
}

func TestValidateHostPort(t *testing.T) {
	for _, tc := range []struct {
		s            string
		portOptional bool
		ok           bool
	}{
		{"8.8.8.8", true, true}, {"8.8.8.8:53", true, true}, {"2001:db8::1", true, true}, {"[2001:db8::1]:53", true, true},
		{"dns.example", true, true}, {"dns.example:5353", true, true},
		{"300.1.1.1", true, false}, {"1.2.3", true, false}, {"8.8.8.8:0", true, false}, {"8.8.8.8:x", true, false},
		{"-bad.example", true, false}, {"", true, false}, {"8.8.8.8", false, false}, {"8.8.8.8:53", false, true},
	} {
		if err := ValidateHostPort(tc.s, tc.portOptional); (err == nil) != tc.ok {
			t.Errorf("ValidateHostPort(%q, %v) = %v, want ok=%v", tc.s, tc.portOptional, err, tc.ok)
		}
	}
}

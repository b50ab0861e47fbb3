package cliflag

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ValidateListenAddress checks an address to listen on, "host:port": the
// port a number from 0 to 65535 (0 picks a free one), the host empty (every
// address), an IP address or a host name.
func ValidateListenAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port, such as :53 or 127.0.0.1:53")
	}
	if err := validatePort(port, 0); err != nil {
		return err
	}
	if host == "" {
		return nil
	}
	return validateHost(host)
}

// ValidateHostPort checks a server's address: "host:port", or "host"
// alone when portOptional. The host is an IP address (IPv6 in brackets
// when a port follows) or a host name; the port 1 to 65535.
func ValidateHostPort(s string, portOptional bool) error {
	if portOptional {
		if _, err := netip.ParseAddr(s); err == nil {
			return nil
		}
		if !strings.Contains(s, ":") {
			return validateHost(s)
		}
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port (IPv6 as [addr]:port)")
	}
	if err := validatePort(port, 1); err != nil {
		return err
	}
	return validateHost(host)
}

func validatePort(port string, min int) error {
	n, err := strconv.Atoi(port)
	if err != nil || n < min || n > 65535 {
		return fmt.Errorf("port %q: want a number from %d to 65535", port, min)
	}
	return nil
}

// validateHost accepts an IP address or a DNS name; something that looks
// like an IPv4 address (digits and dots only) must be one.
func validateHost(h string) error {
	if _, err := netip.ParseAddr(h); err == nil {
		return nil
	}
	if strings.Trim(h, "0123456789.") == "" {
		return fmt.Errorf("%q is not a valid IP address", h)
	}
	name := strings.TrimSuffix(h, ".")
	if name == "" || len(name) > 253 {
		return fmt.Errorf("%q is not a host name", h)
	}
	// Each label a DNS-1123 label, in any case (host names are not case
	// sensitive; Kubernetes's rule is for lowercase object names).
	for _, label := range strings.Split(name, ".") {
		if len(validation.IsDNS1123Label(strings.ToLower(label))) != 0 {
			return fmt.Errorf("%q is not a host name", h)
		}
	}
	return nil
}

package nodelocal

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
)

// LinkLocalIP is the KEP's default link-local listen IP.
const LinkLocalIP = "169.254.20.10"

// DefaultLocalIPs is the --local-ip default: the link-local IP plus the
// cluster DNS Service's IP, from the variables Kubernetes sets in
// kube-system's pods: PARTITION_DNS_SERVICE_HOST (deploy/partition-dns's
// Service, which the kubelets' --cluster-dns names where tpkit is the
// cluster DNS), else KUBE_DNS_SERVICE_HOST.
func DefaultLocalIPs(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, v := range [...]string{"PARTITION_DNS_SERVICE_HOST", "KUBE_DNS_SERVICE_HOST"} {
		if ip := strings.TrimSpace(getenv(v)); ip != "" {
			return LinkLocalIP + "," + ip
		}
	}
	return LinkLocalIP
}

// ParseIPList parses a comma-separated list of IP addresses. It rejects empty
// lists, bad addresses, zones, duplicates, and addresses no host can listen
// on as its own: unspecified, multicast and the IPv4 broadcast address.
func ParseIPList(s string) ([]netip.Addr, error) {
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, f := range cliflag.SplitList(s) {
		ip, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address", f)
		}
		ip = ip.Unmap()
		if ip.Zone() != "" || ip.IsUnspecified() || ip.IsMulticast() || ip == ipv4Broadcast {
			return nil, fmt.Errorf("%q cannot be a listen IP", f)
		}
		if seen[ip] {
			return nil, fmt.Errorf("%s is listed twice", ip)
		}
		seen[ip] = true
		out = append(out, ip)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no IP address in %q", s)
	}
	return out, nil
}

var ipv4Broadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})

// ParseServerList parses a comma-separated list of "host[:port]" DNS servers
// given as IP addresses, adding port 53 where none is given.
func ParseServerList(s string) ([]string, error) {
	var out []string
	for _, f := range cliflag.SplitList(s) {
		host, port := f, "53"
		if h, p, err := net.SplitHostPort(f); err == nil {
			host, port = h, p
		}
		ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
		if err != nil {
			return nil, fmt.Errorf("server %q: not an IP address", f)
		}
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 || strings.TrimLeft(port, "0123456789") != "" {
			return nil, fmt.Errorf("server %q: bad port", f)
		}
		if ip.Zone() != "" {
			return nil, fmt.Errorf("server %q: zoned addresses are not supported", f)
		}
		out = append(out, net.JoinHostPort(ip.Unmap().String(), strconv.FormatUint(n, 10)))
	}
	return out, nil
}

// UsageError is a bad command line: a flag that does not parse or a value
// that is out of range. Programs exit 2 on it. flag.ErrHelp (for -h) is
// wrapped too; errors.Is finds it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{Err: err}
}

func validPort(name string, p int, allowZero bool) error {
	if (p == 0 && allowZero) || (p >= 1 && p <= 65535) {
		return nil
	}
	return fmt.Errorf("--%s=%d is not a port", name, p)
}

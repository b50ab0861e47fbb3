package netif

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// Error kinds, for the setup-error metric.
const (
	KindInterfaceAdd   = "interface_add"
	KindInterfaceCheck = "interface_check"
	KindAddressAdd     = "address_add"
)

// Error is a failed setup step, with its kind.
type Error struct {
	Kind string
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Options configure a Manager.
type Options struct {
	// Name is the dummy interface to create (default "nodelocaldns").
	Name string
	// Fallback is the interface to use when a dummy interface cannot be
	// created; "" disables the fallback.
	Fallback string
	// IPs are the addresses to keep on the interface.
	IPs []netip.Addr
	// IPCommand is the iproute2 binary (default "ip").
	IPCommand string
}

// Manager keeps the IPs on the interface. Safe for concurrent use.
//
// The dummy interface (Options.Name) is the cache's own, as in upstream
// NodeLocal DNS: Teardown deletes it. On the fallback interface, which is
// not, Teardown removes only the cache's addresses, so addresses that were
// there before it started stay: those this manager added, and the IPv4 ones
// carrying the cache's label (OwnLabel), which a previous cache killed
// before its teardown left behind. IPv6 addresses have no labels: a killed
// cache's IPv6 addresses stay on the fallback interface.
type Manager struct {
	opts Options

	mu    sync.Mutex
	dev   string // chosen device, "" until the first Ensure
	added map[netip.Addr]bool
}

// OwnLabel is the label of the IPv4 addresses the cache puts on dev: "<dev>:ndc"
// (at most 15 bytes, the kernel's limit), which marks them as the cache's.
func OwnLabel(dev string) string {
	const suffix = ":ndc"
	if len(dev)+len(suffix) > 15 {
		dev = dev[:15-len(suffix)]
	}
	return dev + suffix
}

// New returns a manager. Nothing is changed until Ensure.
func New(opts Options) *Manager {
	if opts.Name == "" {
		opts.Name = "nodelocaldns"
	}
	if opts.IPCommand == "" {
		opts.IPCommand = "ip"
	}
	return &Manager{opts: opts}
}

// Device returns the interface in use ("" before the first Ensure).
func (m *Manager) Device() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dev
}

// Result says what Ensure did.
type Result struct {
	Device       string
	Fallback     bool
	CreatedLink  bool
	AddedAddress int
}

func (m *Manager) ip(args ...string) (string, error) {
	out, err := exec.Command(m.opts.IPCommand, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", m.opts.IPCommand, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// linkExists reports whether the link exists.
func (m *Manager) linkExists(name string) (bool, error) {
	out, err := m.ip("-j", "link", "show", "dev", name)
	if err != nil {
		if strings.Contains(out, "does not exist") || strings.Contains(out, "Cannot find device") {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// Ensure makes sure the interface exists and is up and holds every IP.
func (m *Manager) Ensure() (Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var res Result
	if m.dev == "" || m.dev == m.opts.Name {
		ok, err := m.linkExists(m.opts.Name)
		if err != nil {
			return res, &Error{Kind: KindInterfaceCheck, Err: err}
		}
		switch {
		case ok:
			m.dev = m.opts.Name
		case m.dev == "" || m.dev == m.opts.Name:
			if _, err := m.ip("link", "add", m.opts.Name, "type", "dummy"); err != nil {
				if m.opts.Fallback == "" || m.dev == m.opts.Name {
					return res, &Error{Kind: KindInterfaceAdd, Err: err}
				}
				klog.InfoS("Dummy interface unavailable, using the fallback interface",
					"interface", m.opts.Name, "fallback", m.opts.Fallback, "err", err)
				m.dev = m.opts.Fallback
				res.Fallback = true
			} else {
				m.dev = m.opts.Name
				res.CreatedLink = true
				klog.InfoS("Created dummy interface", "interface", m.opts.Name)
			}
		}
	}
	res.Device = m.dev
	res.Fallback = m.dev != m.opts.Name
	if _, err := m.ip("link", "set", "dev", m.dev, "up"); err != nil {
		return res, &Error{Kind: KindInterfaceCheck, Err: err}
	}
	have, err := m.addrs(m.dev)
	if err != nil {
		return res, &Error{Kind: KindInterfaceCheck, Err: err}
	}
	var errs []error
	for _, ip := range m.opts.IPs {
		if _, ok := have[ip.Unmap()]; ok {
			continue
		}
		args := []string{"addr", "add", hostPrefix(ip), "dev", m.dev}
		if ip.Unmap().Is4() && m.dev != m.opts.Name {
			args = append(args, "label", OwnLabel(m.dev))
		}
		if _, err := m.ip(args...); err != nil {
			errs = append(errs, &Error{Kind: KindAddressAdd, Err: err})
			continue
		}
		if m.added == nil {
			m.added = map[netip.Addr]bool{}
		}
		m.added[ip.Unmap()] = true
		res.AddedAddress++
	}
	return res, errors.Join(errs...)
}

func hostPrefix(ip netip.Addr) string {
	ip = ip.Unmap()
	return netip.PrefixFrom(ip, ip.BitLen()).String()
}

// Addresses returns the addresses on dev, each with its label ("" for
// none; IPv6 addresses have none).
func (m *Manager) Addresses(dev string) (map[netip.Addr]string, error) {
	return m.addrs(dev)
}

func (m *Manager) addrs(dev string) (map[netip.Addr]string, error) {
	out, err := m.ip("-j", "addr", "show", "dev", dev)
	if err != nil {
		return nil, err
	}
	return ParseAddrJSON([]byte(out))
}

// ParseAddrJSON reads the addresses, with their labels, out of
// `ip -j addr show` output.
func ParseAddrJSON(b []byte) (map[netip.Addr]string, error) {
	var links []struct {
		AddrInfo []struct {
			Local string `json:"local"`
			Label string `json:"label"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(b, &links); err != nil {
		return nil, fmt.Errorf("parsing ip -j addr output: %w", err)
	}
	out := map[netip.Addr]string{}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if ip, err := netip.ParseAddr(a.Local); err == nil {
				out[ip.Unmap()] = a.Label
			}
		}
	}
	return out, nil
}

// Teardown deletes the dummy interface, or, on the fallback interface,
// removes the cache's addresses only: those this manager added and the IPv4
// ones with OwnLabel (a killed cache's). Addresses that were there before
// stay. When this manager never ran Ensure, it cleans what a previous cache
// left: the dummy interface, or its labelled addresses on the fallback.
func (m *Manager) Teardown() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dev := m.dev
	if dev == "" || dev == m.opts.Name {
		if ok, err := m.linkExists(m.opts.Name); err != nil {
			return err
		} else if ok {
			_, err := m.ip("link", "del", m.opts.Name)
			m.added = nil
			return err
		}
		if dev != "" || m.opts.Fallback == "" {
			return nil
		}
		dev = m.opts.Fallback
	}
	have, err := m.addrs(dev)
	if err != nil {
		return err
	}
	var errs []error
	for _, ip := range m.opts.IPs {
		ip = ip.Unmap()
		label, on := have[ip]
		if !on || !m.added[ip] && label != OwnLabel(dev) {
			continue // not there, or not the cache's
		}
		if _, err := m.ip("addr", "del", hostPrefix(ip), "dev", dev); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(m.added, ip)
	}
	return errors.Join(errs...)
}

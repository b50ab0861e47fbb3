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

// DefaultOptions returns the documented defaults for ips.
func DefaultOptions(ips []netip.Addr) Options {
	return Options{Name: "nodelocaldns", Fallback: "lo", IPs: ips, IPCommand: "ip"}
}

// Manager keeps the IPs on the interface. Safe for concurrent use.
//
// It undoes only what it did: Teardown deletes the dummy interface only when
// this manager created it, and otherwise removes only the addresses it added,
// so addresses that were there before it started (on lo, or on an existing
// interface) stay.
type Manager struct {
	opts Options

	mu      sync.Mutex
	dev     string // chosen device, "" until the first Ensure
	created bool   // this manager created the dummy interface
	added   map[netip.Addr]bool
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
				m.created = true
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
		if have[ip.Unmap()] {
			continue
		}
		if _, err := m.ip("addr", "add", hostPrefix(ip), "dev", m.dev); err != nil {
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

// Addresses returns the addresses on dev.
func (m *Manager) Addresses(dev string) (map[netip.Addr]bool, error) {
	return m.addrs(dev)
}

func (m *Manager) addrs(dev string) (map[netip.Addr]bool, error) {
	out, err := m.ip("-j", "addr", "show", "dev", dev)
	if err != nil {
		return nil, err
	}
	return ParseAddrJSON([]byte(out))
}

// ParseAddrJSON reads the addresses out of `ip -j addr show` output.
func ParseAddrJSON(b []byte) (map[netip.Addr]bool, error) {
	var links []struct {
		AddrInfo []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(b, &links); err != nil {
		return nil, fmt.Errorf("parsing ip -j addr output: %w", err)
	}
	out := map[netip.Addr]bool{}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if ip, err := netip.ParseAddr(a.Local); err == nil {
				out[ip.Unmap()] = true
			}
		}
	}
	return out, nil
}

// Teardown undoes what Ensure did: it deletes the dummy interface when this
// manager created it, and otherwise removes the addresses this manager added
// and no others. A manager that never ran Ensure changes nothing.
func (m *Manager) Teardown() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dev == "" {
		return nil
	}
	if m.created {
		if ok, err := m.linkExists(m.dev); err != nil || !ok {
			return err
		}
		if _, err := m.ip("link", "del", m.dev); err != nil {
			return err
		}
		m.created, m.added = false, nil
		return nil
	}
	have, err := m.addrs(m.dev)
	if err != nil {
		return err
	}
	var errs []error
	for ip := range m.added {
		if !have[ip] {
			delete(m.added, ip)
			continue
		}
		if _, err := m.ip("addr", "del", hostPrefix(ip), "dev", m.dev); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(m.added, ip)
	}
	return errors.Join(errs...)
}

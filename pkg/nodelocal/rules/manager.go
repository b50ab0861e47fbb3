package rules

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/coreos/go-iptables/iptables"
)

// runner is the part of *iptables.IPTables the manager uses.
type runner interface {
	List(table, chain string) ([]string, error)
	Insert(table, chain string, pos int, rulespec ...string) error
	Delete(table, chain string, rulespec ...string) error
}

// Options configure a Manager.
type Options struct {
	// Binary is the IPv4 iptables command: "iptables" (the default),
	// "iptables-nft" or "iptables-legacy", or a path. The IPv6 command is
	// the same name with ip6tables.
	Binary string
	// LockWaitSeconds is how long each call waits for the xtables lock
	// (default 5).
	LockWaitSeconds int
}

// Manager keeps a rule set in place. It is safe for concurrent use; calls
// are serialised.
type Manager struct {
	opts Options

	mu  sync.Mutex
	ipt map[int]runner // by family, created on first use
}

// NewManager returns a manager; iptables binaries are looked up on first use.
func NewManager(opts Options) *Manager {
	if opts.Binary == "" {
		opts.Binary = "iptables"
	}
	if opts.LockWaitSeconds <= 0 {
		opts.LockWaitSeconds = 5
	}
	return &Manager{opts: opts, ipt: map[int]runner{}}
}

func (m *Manager) runner(family int) (runner, error) {
	if r, ok := m.ipt[family]; ok {
		return r, nil
	}
	bin := m.opts.Binary
	proto := iptables.ProtocolIPv4
	if family == 6 {
		proto = iptables.ProtocolIPv6
		bin = strings.Replace(bin, "iptables", "ip6tables", 1)
	}
	ipt, err := iptables.New(iptables.IPFamily(proto), iptables.Path(bin), iptables.Timeout(m.opts.LockWaitSeconds))
	if err != nil {
		return nil, &Error{Kind: KindIptables, Err: fmt.Errorf("iptables %s: %w", bin, err)}
	}
	m.ipt[family] = ipt
	return ipt, nil
}

// Error kinds, for the setup-error metric.
const (
	KindIptables     = "iptables"
	KindIptablesLock = "iptables_lock"
)

// Error is a failed iptables step, with its kind.
type Error struct {
	Kind string
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func classify(err error) error {
	if err == nil {
		return nil
	}
	kind := KindIptables
	var ie *iptables.Error
	if errors.As(err, &ie) && (ie.ExitStatus() == 4 || strings.Contains(ie.Error(), "xtables lock")) {
		kind = KindIptablesLock
	} else if strings.Contains(err.Error(), "xtables lock") {
		kind = KindIptablesLock
	}
	return &Error{Kind: kind, Err: err}
}

// chains are the chains the set can use, per family.
var chains = []struct{ table, chain string }{
	{TableRaw, ChainPrerouting},
	{TableRaw, ChainOutput},
	{TableFilter, ChainInput},
	{TableFilter, ChainOutput},
}

// Result says what a Sync changed.
type Result struct {
	Added, Removed int
}

// Sync makes the owned rules exactly want: one copy of each wanted rule,
// no other rule with CommentPrefix. families lists the families to clean
// even when want has no rule in them (4 is always included).
func (m *Manager) Sync(want []Rule, families ...int) (Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fams := map[int]bool{4: true}
	for _, f := range families {
		fams[f] = true
	}
	for _, r := range want {
		fams[r.Family] = true
	}
	var res Result
	var errs []error
	for _, fam := range []int{4, 6} {
		if !fams[fam] {
			continue
		}
		ipt, err := m.runner(fam)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ch := range chains {
			a, r, err := syncChain(ipt, fam, ch.table, ch.chain, want)
			res.Added += a
			res.Removed += r
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return res, errors.Join(errs...)
}

func syncChain(ipt runner, fam int, table, chain string, want []Rule) (added, removed int, err error) {
	lines, err := ipt.List(table, chain)
	if err != nil {
		return 0, 0, classify(fmt.Errorf("listing %s %s: %w", table, chain, err))
	}
	wanted := map[string]Rule{}
	for _, r := range want {
		if r.Family == fam && r.Table == table && r.Chain == chain {
			wanted[r.Comment] = r
		}
	}
	seen := map[string]int{}
	var errs []error
	for _, line := range lines {
		l, ok, perr := ParseListLine(line)
		if perr != nil || !ok || !strings.HasPrefix(l.Comment, CommentPrefix) {
			continue
		}
		seen[l.Comment]++
		if _, ok := wanted[l.Comment]; ok && seen[l.Comment] == 1 {
			continue
		}
		// A duplicate, or an owned rule no longer wanted. Deleting by the
		// listed specification removes the first identical rule, so each
		// delete removes exactly one copy.
		if err := ipt.Delete(table, chain, l.Args...); err != nil {
			errs = append(errs, classify(fmt.Errorf("deleting %s %s %v: %w", table, chain, l.Args, err)))
			continue
		}
		removed++
	}
	for _, r := range want {
		if r.Family != fam || r.Table != table || r.Chain != chain || seen[r.Comment] > 0 {
			continue
		}
		if err := ipt.Insert(table, chain, 1, r.Spec()...); err != nil {
			errs = append(errs, classify(fmt.Errorf("inserting %s: %w", r, err)))
			continue
		}
		added++
	}
	return added, removed, errors.Join(errs...)
}

// Teardown removes every owned rule.
func (m *Manager) Teardown(families ...int) (Result, error) {
	return m.Sync(nil, families...)
}

// Count returns how many copies of each owned rule are installed, by
// comment, in the given families (4 when none are given).
func (m *Manager) Count(families ...int) (map[string]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(families) == 0 {
		families = []int{4}
	}
	out := map[string]int{}
	for _, fam := range families {
		ipt, err := m.runner(fam)
		if err != nil {
			return nil, err
		}
		for _, ch := range chains {
			lines, err := ipt.List(ch.table, ch.chain)
			if err != nil {
				return nil, classify(err)
			}
			for _, line := range lines {
				if l, ok, err := ParseListLine(line); err == nil && ok && strings.HasPrefix(l.Comment, CommentPrefix) {
					out[l.Comment]++
				}
			}
		}
	}
	return out, nil
}

// Present reports how many of rules are installed (at least once).
func (m *Manager) Present(rules []Rule) (int, error) {
	fams := map[int]bool{}
	for _, r := range rules {
		fams[r.Family] = true
	}
	var fl []int
	for f := range fams {
		fl = append(fl, f)
	}
	if len(fl) == 0 {
		return 0, nil
	}
	counts, err := m.Count(fl...)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rules {
		if counts[r.Comment] > 0 {
			n++
		}
	}
	return n, nil
}

package iptables

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	goiptables "github.com/coreos/go-iptables/iptables"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
)

// Family is the IP family a Proxier programs.
type Family string

// The families; the values are the Kubernetes API's IPFamily strings.
const (
	IPv4 Family = "IPv4"
	IPv6 Family = "IPv6"
)

// Options configure a Proxier.
type Options struct {
	// Family is IPv4 (the default, also for "") or IPv6.
	Family Family
	// IPTables runs checks and chain management. Nil builds one for Family.
	IPTables *goiptables.IPTables
	// RestoreCommand is the iptables-restore command and leading arguments;
	// "--noflush --wait" is appended. Empty means iptables-restore (or
	// ip6tables-restore) from PATH.
	RestoreCommand []string
}

// Proxier programs a kubeproxy.Snapshot into iptables. Its Sync has the
// shape of kubeproxy.SyncFunc, so it plugs into a kubeproxy.Runner. It is
// safe for concurrent use; syncs are serialised.
type Proxier struct {
	ipt     *goiptables.IPTables
	restore []string

	mu       sync.Mutex
	r        Renderer
	needFull bool
	last     Result
}

// New returns a Proxier. Its first sync is a full one.
func New(o Options) (*Proxier, error) {
	ipt := o.IPTables
	if ipt == nil {
		proto := goiptables.ProtocolIPv4
		if o.Family == IPv6 {
			proto = goiptables.ProtocolIPv6
		}
		var err error
		if ipt, err = goiptables.New(goiptables.IPFamily(proto), goiptables.Timeout(5)); err != nil {
			return nil, fmt.Errorf("kubeproxy/iptables: %w", err)
		}
	}
	restore := o.RestoreCommand
	if len(restore) == 0 {
		restore = []string{"iptables-restore"}
		if o.Family == IPv6 {
			restore = []string{"ip6tables-restore"}
		}
	}
	return &Proxier{ipt: ipt, restore: restore, r: Renderer{Family: o.Family}, needFull: true}, nil
}

// Sync is a kubeproxy.SyncFunc.
func (p *Proxier) Sync(ctx context.Context, s *kubeproxy.Snapshot, c kubeproxy.Changes) error {
	_, err := p.Apply(ctx, s, c)
	return err
}

// LastResult is what the last successful sync wrote.
func (p *Proxier) LastResult() Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Apply writes the changes c of s and says what it wrote. A full sync is
// done when c asks for it, on the first call, and after a failure.
func (p *Proxier) Apply(ctx context.Context, s *kubeproxy.Snapshot, c kubeproxy.Changes) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var plan *Plan
	if c.Full || p.needFull {
		p.needFull = true
		if err := p.ensureBase(); err != nil {
			return Result{}, err
		}
		chains, err := p.ipt.ListChains("nat")
		if err != nil {
			return Result{}, fmt.Errorf("kubeproxy/iptables: listing nat chains: %w", err)
		}
		plan = p.r.RenderFull(s, chains)
	} else {
		plan = p.r.RenderPartial(s, c.Services)
	}
	if len(plan.Input) > 0 {
		if err := p.runRestore(ctx, plan.Input); err != nil {
			p.needFull = true
			return Result{}, err
		}
	}
	p.r.Commit(plan)
	p.needFull = false
	p.last = plan.Result
	return plan.Result, nil
}

var jumpSpec = []string{"-m", "comment", "--comment", "tpkit service portals", "-j", ServicesChain}

var jumps = []struct{ table, chain string }{
	{"nat", "OUTPUT"}, {"nat", "PREROUTING"}, {"filter", "OUTPUT"}, {"filter", "FORWARD"},
}

// ensureBase creates TPKIT-SERVICES in nat and filter and the jumps to it.
func (p *Proxier) ensureBase() error {
	for _, table := range []string{"nat", "filter"} {
		ok, err := p.ipt.ChainExists(table, ServicesChain)
		if err != nil {
			return fmt.Errorf("kubeproxy/iptables: checking %s/%s: %w", table, ServicesChain, err)
		}
		if !ok {
			if err := p.ipt.NewChain(table, ServicesChain); err != nil {
				return fmt.Errorf("kubeproxy/iptables: creating %s/%s: %w", table, ServicesChain, err)
			}
		}
	}
	for _, j := range jumps {
		if err := p.ipt.InsertUnique(j.table, j.chain, 1, jumpSpec...); err != nil {
			return fmt.Errorf("kubeproxy/iptables: adding jump from %s/%s: %w", j.table, j.chain, err)
		}
	}
	return nil
}

func (p *Proxier) runRestore(ctx context.Context, input []byte) error {
	args := append(append([]string{}, p.restore[1:]...), "--noflush", "--wait")
	cmd := exec.CommandContext(ctx, p.restore[0], args...)
	cmd.Stdin = bytes.NewReader(input)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubeproxy/iptables: %s: %w: %s", strings.Join(p.restore, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// Cleanup removes every chain and jump this package creates. The next sync
// is a full one.
func (p *Proxier) Cleanup(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.needFull = true
	p.r = Renderer{Family: p.r.Family}
	for _, j := range jumps {
		if err := p.ipt.DeleteIfExists(j.table, j.chain, jumpSpec...); err != nil {
			return fmt.Errorf("kubeproxy/iptables: removing jump from %s/%s: %w", j.table, j.chain, err)
		}
	}
	var b bytes.Buffer
	for _, table := range []string{"filter", "nat"} {
		chains, err := p.ipt.ListChains(table)
		if err != nil {
			return fmt.Errorf("kubeproxy/iptables: listing %s chains: %w", table, err)
		}
		var ours []string
		for _, c := range chains {
			if c == ServicesChain || strings.HasPrefix(c, ServiceChainPrefix) || strings.HasPrefix(c, EndpointChainPrefix) {
				ours = append(ours, c)
			}
		}
		if len(ours) == 0 {
			continue
		}
		b.WriteString("*" + table + "\n")
		for _, c := range ours {
			declare(&b, c)
		}
		for _, c := range ours {
			b.WriteString("-X " + c + "\n")
		}
		b.WriteString("COMMIT\n")
	}
	if b.Len() == 0 {
		return nil
	}
	return p.runRestore(ctx, b.Bytes())
}

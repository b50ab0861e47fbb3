package watch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/nodelocal/rules"
)

// Switch is the threshold logic: a pure state machine.
type Switch struct {
	// Local is true while traffic goes to the local cache.
	Local bool
	// FailureThreshold and SuccessThreshold are the run lengths that flip.
	FailureThreshold, SuccessThreshold int

	failures, successes int
}

// Observe records one probe result and reports whether the state flipped.
func (s *Switch) Observe(ok bool) bool {
	if ok {
		s.failures = 0
		s.successes++
		if !s.Local && s.successes >= max(1, s.SuccessThreshold) {
			s.Local, s.successes = true, 0
			return true
		}
		return false
	}
	s.successes = 0
	s.failures++
	if s.Local && s.failures >= max(1, s.FailureThreshold) {
		s.Local, s.failures = false, 0
		return true
	}
	return false
}

// Config configures a Watcher.
type Config struct {
	// Target is the cache's address to probe (link-local IP:port).
	Target string
	// ProbeName is the name asked; CHAOS TXT for id.server. and
	// hostname.bind., IN A otherwise.
	ProbeName string
	// Interval is the time between probes; Timeout bounds one probe.
	Interval, Timeout time.Duration
	// FailureThreshold and SuccessThreshold are the flipping run lengths.
	FailureThreshold, SuccessThreshold int
	// SyncInterval is how often the rule set is re-ensured.
	SyncInterval time.Duration
	// Rules is the whole rule set; its Switch rules are the ones flipped.
	Rules []rules.Rule
	// SkipTeardown leaves the rules in place on shutdown.
	SkipTeardown bool
}

// Defaults are the documented defaults: failover within about
// Interval*FailureThreshold + Timeout, 1.45 s at most.
func Defaults() Config {
	return Config{
		ProbeName: "id.server.",
		Interval:  400 * time.Millisecond, Timeout: 250 * time.Millisecond,
		FailureThreshold: 3, SuccessThreshold: 3,
		SyncInterval: 10 * time.Second,
	}
}

// RuleSyncer is what the watcher needs from *rules.Manager.
type RuleSyncer interface {
	Sync(want []rules.Rule, families ...int) (rules.Result, error)
	Present(rules []rules.Rule) (int, error)
}

// Watcher runs the switch.
type Watcher struct {
	cfg  Config
	mgr  RuleSyncer
	fams []int

	mu      sync.Mutex
	sw      Switch
	lastErr error
	synced  bool

	state       prometheus.Gauge
	flips       *prometheus.CounterVec
	probes      *prometheus.CounterVec
	setupErrors *prometheus.CounterVec
	changes     *prometheus.CounterVec
}

// New returns a watcher and registers its metrics on reg (when not nil).
func New(cfg Config, mgr RuleSyncer, reg prometheus.Registerer) (*Watcher, error) {
	if cfg.Target == "" {
		return nil, errors.New("watch: no probe target")
	}
	if cfg.Interval <= 0 || cfg.Timeout <= 0 || cfg.SyncInterval <= 0 {
		return nil, errors.New("watch: interval, timeout and sync interval must be positive")
	}
	if cfg.FailureThreshold < 1 || cfg.SuccessThreshold < 1 {
		return nil, errors.New("watch: thresholds must be at least 1")
	}
	if cfg.ProbeName == "" {
		cfg.ProbeName = "id.server."
	}
	cfg.ProbeName = dns.Fqdn(cfg.ProbeName)
	if _, ok := dns.IsDomainName(cfg.ProbeName); !ok {
		return nil, fmt.Errorf("watch: probe name %q is not a domain name", cfg.ProbeName)
	}
	w := &Watcher{
		cfg: cfg, mgr: mgr,
		sw: Switch{FailureThreshold: cfg.FailureThreshold, SuccessThreshold: cfg.SuccessThreshold},
		state: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tpkit_nodelocal_switch_state",
			Help: "1 while the kube-dns service IP is served by the local cache (NOTRACK rules in place), 0 while it goes to the kube-dns endpoints.",
		}),
		flips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tpkit_nodelocal_switch_flips_total",
			Help: "Switch flips, by the state flipped to (local, endpoints).",
		}, []string{"to"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tpkit_nodelocal_probes_total",
			Help: "DNS probes of the local cache, by result (success, failure).",
		}, []string{"result"}),
		setupErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tpkit_nodelocal_setup_errors_total",
			Help: "Failed setup steps, by kind (iptables, iptables_lock).",
		}, []string{"kind"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tpkit_nodelocal_rule_changes_total",
			Help: "iptables rules added or removed by syncs, by operation.",
		}, []string{"op"}),
	}
	w.fams = rules.Families(cfg.Rules)
	if reg != nil {
		for _, c := range []prometheus.Collector{w.state, w.flips, w.probes, w.setupErrors, w.changes} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

// Local reports the current state.
func (w *Watcher) Local() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sw.Local
}

// Healthy is nil when the last rule sync succeeded.
func (w *Watcher) Healthy() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.synced {
		return errors.New("rules not synced yet")
	}
	return w.lastErr
}

func (w *Watcher) want(local bool) []rules.Rule {
	if local {
		return w.cfg.Rules
	}
	return rules.WithoutSwitch(w.cfg.Rules)
}

// sync ensures the rule set for the current state.
func (w *Watcher) sync() {
	w.mu.Lock()
	local := w.sw.Local
	w.mu.Unlock()
	res, err := w.mgr.Sync(w.want(local), w.fams...)
	w.record(res, err)
}

func (w *Watcher) record(res rules.Result, err error) {
	if res.Added > 0 {
		w.changes.WithLabelValues("added").Add(float64(res.Added))
		klog.InfoS("Added iptables rules", "count", res.Added)
	}
	if res.Removed > 0 {
		w.changes.WithLabelValues("removed").Add(float64(res.Removed))
		klog.InfoS("Removed iptables rules", "count", res.Removed)
	}
	if err != nil {
		w.countErr(err)
		klog.ErrorS(err, "Syncing iptables rules")
	}
	w.mu.Lock()
	w.lastErr, w.synced = err, true
	w.mu.Unlock()
}

func (w *Watcher) countErr(err error) {
	var re *rules.Error
	kind := rules.KindIptables
	if errors.As(err, &re) {
		kind = re.Kind
	}
	w.setupErrors.WithLabelValues(kind).Inc()
}

// Run probes and syncs until ctx ends, then tears down (unless
// SkipTeardown).
func (w *Watcher) Run(ctx context.Context) error {
	sw := rules.SwitchOnly(w.cfg.Rules)
	local := true
	if len(sw) > 0 {
		n, err := w.mgr.Present(sw)
		if err != nil {
			w.countErr(err)
			klog.ErrorS(err, "Reading iptables rules; starting with traffic on the kube-dns endpoints")
		}
		local = err == nil && n > 0
	}
	w.mu.Lock()
	w.sw.Local = local
	w.mu.Unlock()
	w.setState(local)
	klog.InfoS("Watcher started", "target", w.cfg.Target, "local", local, "interval", w.cfg.Interval,
		"failureThreshold", w.cfg.FailureThreshold, "successThreshold", w.cfg.SuccessThreshold)
	w.sync()

	probeT := time.NewTicker(w.cfg.Interval)
	defer probeT.Stop()
	syncT := time.NewTicker(w.cfg.SyncInterval)
	defer syncT.Stop()
	client := &dns.Client{Net: "udp", Timeout: w.cfg.Timeout}
	for {
		select {
		case <-ctx.Done():
			return w.teardown()
		case <-syncT.C:
			w.sync()
		case <-probeT.C:
			err := Probe(ctx, client, w.cfg.Target, w.cfg.ProbeName)
			if ctx.Err() != nil {
				return w.teardown()
			}
			w.observe(err)
		}
	}
}

func (w *Watcher) setState(local bool) {
	if local {
		w.state.Set(1)
	} else {
		w.state.Set(0)
	}
}

func (w *Watcher) observe(probeErr error) {
	ok := probeErr == nil
	if ok {
		w.probes.WithLabelValues("success").Inc()
	} else {
		w.probes.WithLabelValues("failure").Inc()
		klog.V(2).InfoS("Probe failed", "target", w.cfg.Target, "err", probeErr)
	}
	w.mu.Lock()
	flipped := w.sw.Observe(ok)
	local := w.sw.Local
	w.mu.Unlock()
	if !flipped {
		return
	}
	to := "endpoints"
	if local {
		to = "local"
	}
	w.flips.WithLabelValues(to).Inc()
	w.setState(local)
	klog.InfoS("Switching kube-dns traffic", "to", to, "lastProbeErr", probeErr)
	w.sync()
}

func (w *Watcher) teardown() error {
	if w.cfg.SkipTeardown {
		klog.InfoS("Leaving iptables rules in place (--skip-teardown)")
		return nil
	}
	res, err := w.mgr.Sync(nil, w.fams...)
	klog.InfoS("Removed iptables rules on shutdown", "count", res.Removed)
	if err != nil {
		return fmt.Errorf("tearing down iptables rules: %w", err)
	}
	return nil
}

// Probe sends one query to target and returns nil when the cache answered
// it: NOERROR for a CHAOS identity name, NOERROR or NXDOMAIN otherwise.
func Probe(ctx context.Context, c *dns.Client, target, name string) error {
	m := new(dns.Msg)
	lname := strings.ToLower(dns.Fqdn(name))
	chaos := lname == "id.server." || lname == "hostname.bind."
	if chaos {
		m.SetQuestion(lname, dns.TypeTXT)
		m.Question[0].Qclass = dns.ClassCHAOS
	} else {
		m.SetQuestion(lname, dns.TypeA)
	}
	r, _, err := c.ExchangeContext(ctx, m, target)
	if err != nil {
		return err
	}
	switch {
	case r.Rcode == dns.RcodeSuccess:
		return nil
	case r.Rcode == dns.RcodeNameError && !chaos:
		return nil
	}
	return fmt.Errorf("probe answered %s", dns.RcodeToString[r.Rcode])
}

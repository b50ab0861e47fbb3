package faketp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/ops"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// DefaultBookmarkInterval is how often a watch that allows bookmarks gets
// one when TPOptions.BookmarkInterval is zero.
const DefaultBookmarkInterval = 5 * time.Second

// TPOptions configure one TP.
type TPOptions struct {
	// Name is the TP's name: the kubeconfig context and file name.
	Name string
	// Listen is the address to serve on; "127.0.0.1:0" when empty. The port
	// chosen at the first start is kept across restarts.
	Listen string
	// AdvertiseAddress is the IP address the master Endpoints
	// default/kubernetes name, as kube-apiserver's --advertise-address:
	// when empty, the host of the listen address, or the host's default
	// address when that is unspecified (0.0.0.0, ::).
	AdvertiseAddress string
	// KubeconfigDir receives Name.kubeconfig. Required.
	KubeconfigDir string
	// DataFile is the bbolt file; empty keeps the TP in memory (which still
	// survives Restart, but not the process).
	DataFile string
	// Admission is the TP's admission chain, run on every create, update
	// and delete (except Seed and Generate).
	Admission admission.Chain
	// History is the number of events of each resource kept for watches,
	// as Arktos's watch cache does (store.DefaultHistory, 100, when zero):
	// a watch from an older version gets a 410 Expired ERROR event.
	History int
	// BookmarkInterval: see DefaultBookmarkInterval.
	BookmarkInterval time.Duration
	// WatchList says how the TP answers client-go's watch-list requests
	// (sendInitialEvents=true); WatchListIgnored, as Arktos, by default.
	WatchList WatchListMode
	// EndpointSlices serves discovery.k8s.io/v1 EndpointSlices. Arktos
	// has none, so they are off by default and the group is 404.
	EndpointSlices bool
	// Loading starts the TP unready: /readyz answers 503 ("loading") until
	// DoneLoading, so that a harness seeding or generating objects after
	// Start can say when the TP is complete. Requests are served
	// meanwhile, as an API server serves while its caches fill.
	Loading bool
	// Controllers are the controllers the TP runs, as Arktos's controller
	// manager would (TenantController, EndpointsController): nil runs
	// DefaultControllers, an empty non-nil slice none.
	Controllers []string
	// ServiceCIDR is the range the TP's services get their cluster IPs
	// from; DefaultServiceCIDR(0), 10.96.0.0/16, when zero. Addresses
	// services ask for are kept, in the range or not.
	ServiceCIDR netip.Prefix
	// Timeouts bound slow and idle clients (ops.DefaultTimeouts when zero;
	// the write timeout is not used: a watch is one long response).
	Timeouts ops.Timeouts
}

// WatchListMode is how a TP answers watch-list (streaming list) requests.
type WatchListMode int

const (
	// WatchListIgnored (the default) ignores sendInitialEvents and
	// resourceVersionMatch on watches, as Arktos (Kubernetes 1.18) does:
	// the initial state comes as ADDED events but no initial-events-end
	// bookmark ever does (sample 69), so a client-go reflector with the
	// WatchListClient feature on never syncs. Components must turn that
	// feature off against real TPs.
	WatchListIgnored WatchListMode = iota
	// WatchListServed streams the initial state and ends it with the
	// k8s.io/initial-events-end bookmark, as kube-apiserver 1.32+ does.
	WatchListServed
	// WatchListRejected answers 422 Invalid, as a kube-apiserver with the
	// WatchList feature off does; client-go then falls back to list.
	WatchListRejected
)

// ParseWatchListMode parses "ignored" (or ""), "served" or "rejected".
func ParseWatchListMode(s string) (WatchListMode, error) {
	switch s {
	case "ignored", "":
		return WatchListIgnored, nil
	case "served":
		return WatchListServed, nil
	case "rejected":
		return WatchListRejected, nil
	}
	return 0, fmt.Errorf("unknown watch-list mode %q: want ignored, served or rejected", s)
}

// Identity is a user that a kubeconfig written by KubeconfigFor acts as.
type Identity struct {
	Name   string
	Groups []string
	// Tenant is the user's Arktos tenant, passed to admission as the user
	// extra admission.UserTenantExtraKey; empty for none.
	Tenant string
}

func (id Identity) user() *admission.User {
	u := &admission.User{Name: id.Name, Groups: append([]string(nil), id.Groups...)}
	if id.Tenant != "" {
		u.Extra = map[string][]string{admission.UserTenantExtraKey: {id.Tenant}}
	}
	return u
}

// Outage is a fault mode of a TP.
type Outage int32

const (
	// OutageNone serves normally.
	OutageNone Outage = iota
	// OutageRefuse closes the listener and every connection, so clients get
	// "connection refused" (the process is down).
	OutageRefuse
	// OutageUnavailable answers every request with 503 ServiceUnavailable
	// (the process is up but cannot reach its etcd).
	OutageUnavailable
)

// String names the mode as the admin endpoint spells it.
func (o Outage) String() string {
	switch o {
	case OutageRefuse:
		return "refuse"
	case OutageUnavailable:
		return "503"
	}
	return "none"
}

// ParseOutage parses "none", "refuse" or "503".
func ParseOutage(s string) (Outage, error) {
	switch s {
	case "none", "off", "":
		return OutageNone, nil
	case "refuse":
		return OutageRefuse, nil
	case "503", "unavailable":
		return OutageUnavailable, nil
	}
	return OutageNone, fmt.Errorf("unknown outage mode %q: want none, refuse or 503", s)
}

// TP is one fake tenant partition: an API server with its own store.
type TP struct {
	name             string
	opts             TPOptions
	chain            admission.Chain
	bookmarkInterval time.Duration
	metrics          *metrics
	ops              *ops.Server
	serviceIPs       *serviceIPs
	latency          atomic.Int64
	expiredWatches   atomic.Int64
	outage           atomic.Int32
	loading          atomic.Bool // see TPOptions.Loading

	// controllers run, one at a time (ctrlMu), after every change.
	controllers []string
	ctrlMu      sync.Mutex

	// storeP is read without mu by request handlers; it is replaced only
	// when a stopped TP with a data file starts again. A closed store
	// answers reads from memory and fails writes with ErrClosed.
	storeP    atomic.Pointer[store.Store]
	storeOpen bool
	// loaded: the store came from a data file that existed before the
	// first start, so it holds a previous run's state (see Loaded).
	loaded bool

	mu       sync.Mutex
	addr     string // fixed after the first start
	srv      *http.Server
	serving  chan struct{} // closed when srv.Serve returns
	running  bool
	tokens   map[string]Identity
	kcPath   string
	adminTok string
	extraKCs int
}

// NewTP returns a stopped TP; Start it.
func NewTP(o TPOptions) (*TP, error) {
	if err := tenancy.ValidatePartitionName(o.Name); err != nil {
		return nil, err
	}
	if o.KubeconfigDir == "" {
		return nil, errors.New("faketp: TPOptions.KubeconfigDir is required")
	}
	if err := checkControllers(o.Controllers); err != nil {
		return nil, err
	}
	if o.AdvertiseAddress != "" && net.ParseIP(o.AdvertiseAddress) == nil {
		return nil, fmt.Errorf("faketp %s: advertise address %q is not an IP address", o.Name, o.AdvertiseAddress)
	}
	if !o.ServiceCIDR.IsValid() {
		o.ServiceCIDR, _ = DefaultServiceCIDR(0)
	}
	if err := CheckServiceCIDR(o.ServiceCIDR); err != nil {
		return nil, fmt.Errorf("faketp %s: service range: %w", o.Name, err)
	}
	tp := &TP{
		name:             o.Name,
		opts:             o,
		chain:            o.Admission,
		bookmarkInterval: o.BookmarkInterval,
		metrics:          newMetrics(o.Name),
		ops:              ops.New(nil),
		addr:             o.Listen,
		tokens:           map[string]Identity{},
		controllers:      o.Controllers,
		serviceIPs:       newServiceIPs(o.ServiceCIDR),
	}
	if tp.controllers == nil {
		tp.controllers = DefaultControllers()
	}
	if tp.bookmarkInterval <= 0 {
		tp.bookmarkInterval = DefaultBookmarkInterval
	}
	if tp.addr == "" {
		tp.addr = "127.0.0.1:0"
	}
	tp.loading.Store(o.Loading)
	tp.ops.AddReadyz("loading", func() error {
		if tp.loading.Load() {
			return errors.New("objects are still being loaded (seed, generate)")
		}
		return nil
	})
	tp.ops.AddReadyz("store", func() error {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		if !tp.storeOpen {
			return errors.New("store not open")
		}
		return nil
	})
	tp.adminTok = newToken()
	tp.tokens[tp.adminTok] = Identity{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}, Tenant: tenancy.SystemTenant}
	return tp, nil
}

// DoneLoading makes a TP started with TPOptions.Loading ready.
func (tp *TP) DoneLoading() { tp.loading.Store(false) }

// Loading reports whether the TP still waits for DoneLoading.
func (tp *TP) Loading() bool { return tp.loading.Load() }

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Name returns the TP's name.
func (tp *TP) Name() string { return tp.name }

// ServiceCIDR returns the range the TP's services get cluster IPs from.
func (tp *TP) ServiceCIDR() netip.Prefix { return tp.serviceIPs.prefix }

// Addr returns host:port (the real port once started).
func (tp *TP) Addr() string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.addr
}

// URL returns the TP's base URL, "http://127.0.0.1:port".
func (tp *TP) URL() string { return "http://" + tp.Addr() }

// KubeconfigPath returns the admin kubeconfig, whose context is the TP name.
func (tp *TP) KubeconfigPath() string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.kcPath
}

// RESTConfig returns an admin rest.Config for the TP. It is not wrapped:
// build clients with pkg/tenancy/k8s's WrapConfig(tp.RESTConfig()) to keep tenants.
func (tp *TP) RESTConfig() *rest.Config {
	return &rest.Config{Host: tp.URL(), BearerToken: tp.adminTok, QPS: 1000, Burst: 2000}
}

// Loaded reports whether the TP started from a data file that already
// existed: its objects are a previous run's, which a seed must not
// overwrite (fake-tp --seed applies only to TPs that start empty).
func (tp *TP) Loaded() bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.loaded
}

// Store returns the TP's store: nil before the first Start, closed (reads
// only) while a TP with a data file is stopped.
func (tp *TP) Store() *store.Store { return tp.storeP.Load() }

// st is the store for request handlers.
func (tp *TP) st() *store.Store { return tp.storeP.Load() }

// Start opens the store (loading the data file) and serves. Restarts reuse
// the port of the first start.
func (tp *TP) Start(ctx context.Context) error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.running {
		return nil
	}
	if !tp.storeOpen {
		if tp.opts.DataFile != "" {
			if err := os.MkdirAll(filepath.Dir(tp.opts.DataFile), 0o755); err != nil {
				return err
			}
			if _, err := os.Stat(tp.opts.DataFile); err == nil {
				tp.loaded = true
			}
		}
		s, err := store.Open(store.Options{Path: tp.opts.DataFile, History: tp.opts.History, Index: indexData})
		if err != nil {
			return fmt.Errorf("faketp %s: %w", tp.name, err)
		}
		tp.storeP.Store(s)
		tp.storeOpen = true
		tp.serviceIPs.forget() // the data file may hold other services
		if err := tp.bootstrap(); err != nil {
			return err
		}
	}
	var ln net.Listener
	var err error
	for i := 0; ; i++ {
		// Right after a stop the kernel may still hold the port briefly.
		ln, err = net.Listen("tcp", tp.addr)
		if err == nil || i == 50 || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("faketp %s: listening on %s: %w", tp.name, tp.addr, err)
	}
	tp.addr = ln.Addr().String()
	if err := tp.reconcileMaster(tp.addr); err != nil {
		_ = ln.Close()
		return err
	}
	// A slow or idle client cannot hold a connection (and a file
	// descriptor) forever. A watch is not cut by the read timeout (net/http
	// lifts the read deadline once a request is read), and nothing bounds a
	// response's writing, since a watch is one long response.
	to := tp.opts.Timeouts
	if to == (ops.Timeouts{}) {
		to = ops.DefaultTimeouts
	}
	tp.srv = &http.Server{Handler: tp, ReadHeaderTimeout: to.ReadHeader, ReadTimeout: to.Read, IdleTimeout: to.Idle, MaxHeaderBytes: to.MaxHeaderBytes}
	tp.serving = make(chan struct{})
	tp.running = true
	srv, serving := tp.srv, tp.serving
	go func() {
		defer close(serving)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Serving failed", "tp", tp.name)
		}
	}()
	if tp.kcPath == "" {
		tp.kcPath = filepath.Join(tp.opts.KubeconfigDir, tp.name+".kubeconfig")
		if err := writeKubeconfig(tp.kcPath, tp.name, "http://"+tp.addr, tp.adminTok); err != nil {
			return err
		}
	}
	return nil
}

// systemNamespaces exist in the system tenant of every Arktos TP from the
// start (samples 20, 80).
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// bootstrap creates what every Arktos TP has from the start: the system
// tenant's namespaces. There is no Tenant object "system" (sample 11)
// unless the tenant controller runs, which makes it.
func (tp *TP) bootstrap() error {
	defer tp.changed(store.Key{Resource: "tenants", Name: tenancy.SystemTenant})
	var objs []obj
	for _, ns := range systemNamespaces {
		if _, ok := tp.st().Get(store.Key{Resource: "namespaces", Tenant: tenancy.SystemTenant, Name: ns}); !ok {
			objs = append(objs, obj{"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": ns, "tenant": tenancy.SystemTenant}})
		}
	}
	if len(objs) == 0 {
		return nil
	}
	return tp.seedObjects(objs)
}

// Stop stops serving: every connection closes, watches end. With a data
// file the store is closed too (Restart reloads it); in memory it is kept.
func (tp *TP) Stop() error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.stopLocked(tp.opts.DataFile != "")
}

func (tp *TP) stopLocked(closeStore bool) error {
	if tp.running {
		_ = tp.srv.Close()
		<-tp.serving
		tp.running = false
	}
	s := tp.st()
	if s == nil || !tp.storeOpen {
		return nil
	}
	s.CloseWatches()
	if closeStore {
		tp.storeOpen = false
		return s.Close()
	}
	return nil
}

// Restart stops and starts the TP on the same port with the same data.
func (tp *TP) Restart(ctx context.Context) error {
	if err := tp.Stop(); err != nil {
		return err
	}
	return tp.Start(ctx)
}

// close stops the TP and closes its store for good.
func (tp *TP) close() error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.stopLocked(true)
}

// SetOutage injects (or ends, with OutageNone) an outage.
func (tp *TP) SetOutage(ctx context.Context, o Outage) error {
	switch o {
	case OutageRefuse:
		tp.outage.Store(int32(OutageNone))
		tp.mu.Lock()
		defer tp.mu.Unlock()
		return tp.stopLocked(false)
	case OutageUnavailable:
		tp.outage.Store(int32(o))
		tp.mu.Lock()
		running := tp.running
		tp.mu.Unlock()
		if !running {
			return tp.Start(ctx)
		}
		return nil
	case OutageNone:
		tp.outage.Store(int32(OutageNone))
		return tp.Start(ctx)
	}
	return fmt.Errorf("unknown outage mode %d", o)
}

// SetLatency adds d before every request is handled (0 removes it).
func (tp *TP) SetLatency(d time.Duration) { tp.latency.Store(int64(d)) }

// CloseWatches ends every open watch stream, as an API server restart or a
// load balancer would, once it has sent the events committed before the
// call (so a test can end a watch and read all it got); clients re-watch
// from their last version.
func (tp *TP) CloseWatches() {
	if s := tp.Store(); s != nil {
		s.CloseWatches()
	}
}

// Compact is an etcd compaction (and a watch cache restart): lists at an
// older resourceVersion and continued lists get 410 Gone, and watches from
// an older version a 410 Expired ERROR event, so reflectors relist.
func (tp *TP) Compact() {
	if s := tp.Store(); s != nil {
		s.Compact()
	}
}

// KubeconfigFor writes a kubeconfig (context named after the TP) whose token
// authenticates as id, and returns its path and a matching rest.Config.
func (tp *TP) KubeconfigFor(id Identity) (string, *rest.Config, error) {
	if id.Name == "" {
		return "", nil, errors.New("faketp: Identity.Name is required")
	}
	tok := newToken()
	tp.mu.Lock()
	tp.tokens[tok] = id
	tp.extraKCs++
	path := filepath.Join(tp.opts.KubeconfigDir, fmt.Sprintf("%s-%s-%d.kubeconfig", tp.name, sanitize(id.Name), tp.extraKCs))
	tp.mu.Unlock()
	if err := writeKubeconfig(path, tp.name, tp.URL(), tok); err != nil {
		return "", nil, err
	}
	return path, &rest.Config{Host: tp.URL(), BearerToken: tok, QPS: 1000, Burst: 2000}, nil
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

func writeKubeconfig(path, name, server, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("faketp: writing kubeconfig %s: %w", path, err)
	}
	return nil
}

package kubeletcache

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

// Strategy is how a manager keeps objects current; the three upstream
// kubelet strategies, each its own type (get.go, cache.go, watch.go).
type Strategy string

const (
	// Get asks the pod's TP on every call.
	Get Strategy = "Get"
	// Cache keeps an answer for Options.TTL.
	Cache Strategy = "Cache"
	// Watch runs one reflector per referenced object on the pod's TP, with
	// a metadata.name field selector.
	Watch Strategy = "Watch"
)

// Resolver decides which TP a pod's configmap or secret comes from, in the
// shape of Arktos's managers: *tporigin.ClientChooser is one (the pod's
// recorded origin, else its regular tenant's TP, else an error wrapping
// tporigin.ErrUnknownPod).
type Resolver interface {
	ObjectKey(tenant, namespace, name, podUID string) (tporigin.ObjectKey, error)
}

// Partitions gives the client of a TP by name: *partition.Set is one.
type Partitions interface {
	Get(name string) (*partition.Partition, bool)
}

// Options configure a manager. AddFlags binds them to flags.
type Options struct {
	// Strategy is Get, Cache or Watch; Watch when empty, as in kubelet.
	Strategy Strategy
	// TTL is how long Cache serves an answer before asking again.
	TTL time.Duration
	// MaxIdle is how long a Watch reflector runs without a Get before Run
	// stops it; the next Get restarts it.
	MaxIdle time.Duration
	// SyncTimeout bounds how long a Get waits for a new reflector's first
	// list, or for a TP, before it serves the last known object or fails.
	SyncTimeout time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Defaults.
const (
	DefaultTTL         = time.Minute
	DefaultMaxIdle     = 10 * time.Minute
	DefaultSyncTimeout = 5 * time.Second
)

// AddFlags registers the manager flags on fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	if o.Strategy == "" {
		o.Strategy = Watch
	}
	fs.Func("configmap-and-secret-change-detection-strategy",
		"How configmaps and secrets of pods are kept current: Get, Cache or Watch (default Watch).",
		func(s string) error {
			switch Strategy(s) {
			case Get, Cache, Watch:
				o.Strategy = Strategy(s)
				return nil
			}
			return fmt.Errorf("unknown strategy %q: want Get, Cache or Watch", s)
		})
	fs.DurationVar(&o.TTL, "configmap-and-secret-cache-ttl", DefaultTTL, "How long the Cache strategy serves an object before asking its tenant partition again.")
	fs.DurationVar(&o.MaxIdle, "configmap-and-secret-watch-max-idle", DefaultMaxIdle, "How long a Watch reflector runs without being read before it is stopped.")
	fs.DurationVar(&o.SyncTimeout, "configmap-and-secret-sync-timeout", DefaultSyncTimeout, "How long a read waits for a tenant partition before serving the last known object or failing.")
}

func (o *Options) setDefaults() error {
	switch o.Strategy {
	case "":
		o.Strategy = Watch
	case Get, Cache, Watch:
	default:
		return fmt.Errorf("kubeletcache: unknown strategy %q: want Get, Cache or Watch", o.Strategy)
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxIdle <= 0 {
		o.MaxIdle = DefaultMaxIdle
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = DefaultSyncTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Freshness says how current the object a manager serves is.
type Freshness struct {
	// Partition is the TP the object comes from.
	Partition string
	// AsOf is when the TP last confirmed the object (or its absence). For a
	// watched object whose watch is up, it is now.
	AsOf time.Time
	// Age is how old AsOf is.
	Age time.Duration
	// Stale is true when the last attempt to reach the TP failed: what is
	// served is the last known object.
	Stale bool
	// LastError is that failure.
	LastError error
	// NotFound is true when the TP said the object does not exist.
	NotFound bool
}

// strategy is what differs between Get, Cache and Watch. The manager
// keeps the registered pods and their items; a strategy keeps an item's
// object current.
type strategy[T runtime.Object] interface {
	// referenced is called, with manager.mu held, when a pod registers a
	// reference to it; isNew when no pod referenced it before.
	referenced(it *item[T], isNew bool)
	// get serves it's object.
	get(it *item[T]) (T, error)
	// freshness reports on it at now; it.mu is held.
	freshness(it *item[T], now time.Time) Freshness
	// stop stops it's reflector, if it runs one, and reports whether it
	// did; it.mu is held.
	stop(it *item[T]) bool
}

// podEntry is a registered pod: its TP, tenant and namespace, and the names
// of the objects it references there.
type podEntry struct {
	tp, tenant, ns string
	names          []string
	ref            string // for errors: tenant/namespace/name (uid)
}

// key is the key of the pod's referenced object name. Objects are keyed by
// tenancy.Key: the same tenant/namespace/name in two TPs are two objects.
func (pe *podEntry) key(name string) tenancy.Key {
	return tenancy.Key{Partition: pe.tp, Tenant: pe.tenant, Namespace: pe.ns, Name: name}
}

// item is one referenced object.
type item[T runtime.Object] struct {
	key  tenancy.Key
	refs int // guarded by manager.mu

	lastAccess atomic.Int64 // unix nanoseconds of the last Get

	mu       sync.Mutex
	obj      T
	have     bool      // obj is the last known object
	notFound bool      // the TP said it does not exist
	asOf     time.Time // last answer from the TP
	lastErr  error     // last failure to reach the TP, cleared by an answer
	removed  bool      // no pod references it any more

	watch watchState // the Watch strategy's reflector
}

// manager is the shared core of ConfigMapManager and SecretManager: the
// registered pods and the objects they reference, served by one strategy.
type manager[T runtime.Object] struct {
	k     kind[T]
	parts Partitions
	res   Resolver
	o     Options
	gr    schema.GroupResource
	s     strategy[T]

	base   context.Context
	stop   context.CancelFunc
	mu     sync.RWMutex
	pods   map[types.UID]*podEntry
	items  map[tenancy.Key]*item[T]
	closed bool
	wg     sync.WaitGroup // reflectors

	m *metrics
}

func newManager[T runtime.Object](k kind[T], parts Partitions, res Resolver, o Options) (*manager[T], error) {
	if parts == nil || res == nil {
		return nil, errors.New("kubeletcache: partitions and resolver are required")
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	// The context only carries cancellation to reflectors started later;
	// nothing runs until a pod is registered.
	base, stop := context.WithCancel(context.Background())
	m := &manager[T]{
		k: k, parts: parts, res: res, o: o,
		gr:    schema.GroupResource{Resource: k.api.Name},
		base:  base,
		stop:  stop,
		pods:  make(map[types.UID]*podEntry),
		items: make(map[tenancy.Key]*item[T]),
		m:     newMetrics(k.api.Name),
	}
	switch o.Strategy {
	case Get:
		m.s = getter[T]{m}
	case Cache:
		m.s = ttlCache[T]{m}
	default:
		m.s = watcher[T]{m}
	}
	return m, nil
}

func podRef(pod *corev1.Pod) string {
	return fmt.Sprintf("%s/%s/%s (uid %s)", tenancy.TenantOf(pod), pod.Namespace, pod.Name, pod.UID)
}

// entryFor decides, through the resolver, where each object pod references
// lives: the pod's TP. There is no default.
func (m *manager[T]) entryFor(pod *corev1.Pod) (*podEntry, error) {
	pe := &podEntry{tenant: tenancy.NormalTenant(tenancy.TenantOf(pod)), ns: pod.Namespace, names: m.k.names(pod), ref: podRef(pod)}
	for _, name := range pe.names {
		key, err := m.res.ObjectKey(pe.tenant, pe.ns, name, string(pod.UID))
		if err != nil {
			return nil, fmt.Errorf("kubeletcache: pod %s: its %s cannot be fetched: %w", pe.ref, m.k.api.Name, err)
		}
		if pe.tp == "" {
			pe.tp = key.Partition
		}
		if key.Key != pe.key(name) {
			return nil, fmt.Errorf("kubeletcache: pod %s: %s %s is placed at %s", pe.ref, m.k.api.Name, name, key.Key)
		}
	}
	if _, exists := m.parts.Get(pe.tp); pe.tp != "" && !exists {
		return nil, fmt.Errorf("kubeletcache: pod %s comes from partition %q, which this node is not configured to reach", pe.ref, pe.tp)
	}
	return pe, nil
}

// RegisterPod records the objects pod references, on the pod's TP, and for
// Watch starts their reflectors. Registering a pod again replaces its
// references (an updated pod); registering it unchanged changes nothing.
// An error means the pod's TP is unknown; nothing is registered then.
func (m *manager[T]) RegisterPod(pod *corev1.Pod) error {
	if pod == nil || pod.UID == "" {
		return errors.New("kubeletcache: RegisterPod needs a pod with a UID")
	}
	pe, err := m.entryFor(pod)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("kubeletcache: manager is closed")
	}
	old := m.pods[pod.UID]
	for _, name := range pe.names {
		key := pe.key(name)
		it := m.items[key]
		isNew := it == nil
		if isNew {
			it = &item[T]{key: key}
			m.items[key] = it
			it.lastAccess.Store(m.o.Now().UnixNano())
		}
		if isNew || old == nil || old.tp != pe.tp || !slices.Contains(old.names, name) {
			m.s.referenced(it, isNew)
		}
		it.refs++
	}
	m.pods[pod.UID] = pe
	if old != nil {
		m.releaseLocked(old)
	}
	return nil
}

// UnregisterPod drops pod's references; objects no pod references any more
// are forgotten and their reflectors stopped. Unregistering an unknown pod
// does nothing.
func (m *manager[T]) UnregisterPod(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pe := m.pods[pod.UID]
	if pe == nil {
		return
	}
	delete(m.pods, pod.UID)
	m.releaseLocked(pe)
}

func (m *manager[T]) releaseLocked(pe *podEntry) {
	for _, name := range pe.names {
		key := pe.key(name)
		it := m.items[key]
		if it == nil {
			continue
		}
		if it.refs--; it.refs <= 0 {
			delete(m.items, key)
			it.mu.Lock()
			it.removed = true
			m.s.stop(it)
			it.mu.Unlock()
		}
	}
}

// lookup finds the item a registered pod reads as tenant/namespace/name,
// where the resolver places it now, or a clear error.
func (m *manager[T]) lookup(tenant, namespace, name string, podUID types.UID) (*item[T], error) {
	m.mu.RLock()
	pe := m.pods[podUID]
	m.mu.RUnlock()
	if pe == nil {
		return nil, fmt.Errorf("kubeletcache: pod uid %s is not registered with the %s manager", podUID, m.k.api.Name)
	}
	key, err := m.res.ObjectKey(tenant, namespace, name, string(podUID))
	if err != nil {
		return nil, fmt.Errorf("kubeletcache: %s %s/%s/%s for pod %s: %w", m.k.api.Name, tenant, namespace, name, pe.ref, err)
	}
	if !slices.Contains(pe.names, name) || key.Tenant != pe.tenant || key.Namespace != pe.ns {
		return nil, fmt.Errorf("kubeletcache: %s %s is not referenced by pod %s", m.k.api.Name, key.Key, pe.ref)
	}
	if key.Partition != pe.tp {
		// The pod's origin changed since RegisterPod (its first origin
		// deleted it while another TP still reports it).
		return nil, fmt.Errorf("kubeletcache: pod %s was registered from partition %s and is now placed in %s: register it again", pe.ref, pe.tp, key.Partition)
	}
	m.mu.RLock()
	it := m.items[key.Key]
	m.mu.RUnlock()
	if it == nil { // unregistered meanwhile
		return nil, fmt.Errorf("kubeletcache: pod uid %s is not registered with the %s manager", podUID, m.k.api.Name)
	}
	return it, nil
}

// get is GetConfigMap and GetSecret. The object returned is shared: callers
// must not modify it.
func (m *manager[T]) get(tenant, namespace, name string, podUID types.UID) (T, error) {
	it, err := m.lookup(tenant, namespace, name, podUID)
	if err != nil {
		var zero T
		return zero, err
	}
	it.lastAccess.Store(m.o.Now().UnixNano())
	return m.s.get(it)
}

// Freshness reports how current the object that the registered pod podUID
// reads as tenant/namespace/name is.
func (m *manager[T]) Freshness(tenant, namespace, name string, podUID types.UID) (Freshness, error) {
	it, err := m.lookup(tenant, namespace, name, podUID)
	if err != nil {
		return Freshness{}, err
	}
	now := m.o.Now()
	it.mu.Lock()
	defer it.mu.Unlock()
	return m.s.freshness(it, now), nil
}

// freshnessOfAnswer is Freshness for the strategies that ask the TP: the
// last answer's time, stale when the last attempt failed.
func freshnessOfAnswer[T runtime.Object](it *item[T], now time.Time) Freshness {
	f := Freshness{Partition: it.key.Partition, AsOf: it.asOf, LastError: it.lastErr, NotFound: it.notFound, Stale: it.lastErr != nil}
	if !f.AsOf.IsZero() {
		f.Age = now.Sub(f.AsOf)
	}
	return f
}

// Reflectors is the number of running reflectors (Watch strategy).
func (m *manager[T]) Reflectors() int {
	n := 0
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, it := range m.items {
		it.mu.Lock()
		if it.watch.running {
			n++
		}
		it.mu.Unlock()
	}
	return n
}

// Run stops idle reflectors every MaxIdle/2 until ctx ends, then stops every
// reflector and waits for them (Close). The Get and Cache strategies need no
// Run.
func (m *manager[T]) Run(ctx context.Context) {
	tick := time.NewTicker(m.o.MaxIdle / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			m.Close()
			return
		case <-tick.C:
			m.RecycleIdle()
		}
	}
}

// RecycleIdle stops the reflectors of objects not read for MaxIdle, and
// reports how many it stopped. Their last known objects are kept; the next
// Get restarts the reflector.
func (m *manager[T]) RecycleIdle() int {
	now := m.o.Now().UnixNano()
	n := 0
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, it := range m.items {
		if time.Duration(now-it.lastAccess.Load()) < m.o.MaxIdle {
			continue
		}
		it.mu.Lock()
		if m.s.stop(it) {
			n++
		}
		it.mu.Unlock()
	}
	return n
}

// Close stops every reflector and waits for them to end. Later calls to
// RegisterPod fail.
func (m *manager[T]) Close() {
	m.mu.Lock()
	m.closed = true
	for _, it := range m.items {
		it.mu.Lock()
		m.s.stop(it)
		it.mu.Unlock()
	}
	m.mu.Unlock()
	m.stop()
	m.wg.Wait()
}

// ConfigMapManager serves pods' configmaps from each pod's own TP.
type ConfigMapManager struct{ *manager[*corev1.ConfigMap] }

// NewConfigMapManager returns a manager that reaches TPs through parts and
// places each pod's objects through res (tporigin.NewClientChooser(tracker)).
// It starts nothing: reflectors start when pods are registered (Watch), and
// Run recycles idle ones.
func NewConfigMapManager(parts Partitions, res Resolver, o Options) (*ConfigMapManager, error) {
	m, err := newManager(configMapKind, parts, res, o)
	if err != nil {
		return nil, err
	}
	return &ConfigMapManager{m}, nil
}

// GetConfigMap returns the configmap tenant/namespace/name as the TP of the
// registered pod podUID has it: Arktos's kubelet configmap.Manager shape.
// The object is shared and must not be modified. Errors: the pod is not
// registered, or does not reference the configmap; its TP is not known any
// more (tporigin.ErrUnknownPod); NotFound from the TP; the TP unreachable
// with no last known object.
func (c *ConfigMapManager) GetConfigMap(tenant, namespace, name string, podUID types.UID) (*corev1.ConfigMap, error) {
	return c.get(tenant, namespace, name, podUID)
}

// SecretManager serves pods' secrets from each pod's own TP.
type SecretManager struct{ *manager[*corev1.Secret] }

// NewSecretManager is NewConfigMapManager for secrets.
func NewSecretManager(parts Partitions, res Resolver, o Options) (*SecretManager, error) {
	m, err := newManager(secretKind, parts, res, o)
	if err != nil {
		return nil, err
	}
	return &SecretManager{m}, nil
}

// GetSecret is GetConfigMap for secrets: Arktos's secret.Manager shape,
// GetSecret(tenant, namespace, name, ownerPodUID).
func (s *SecretManager) GetSecret(tenant, namespace, name string, podUID types.UID) (*corev1.Secret, error) {
	return s.get(tenant, namespace, name, podUID)
}

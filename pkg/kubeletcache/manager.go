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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
)

// Strategy is how a manager keeps objects current; the three upstream
// kubelet strategies.
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

// Resolver tells the TP of a pod: *tporigin.Tracker is one.
type Resolver interface {
	// OriginOf returns the TP a pod UID came from.
	OriginOf(uid types.UID) (string, bool)
	// PartitionOfTenant returns the TP of a regular tenant.
	PartitionOfTenant(tenant string) (string, bool)
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

// podEntry is a registered pod: its TP, tenant and namespace, and the names
// of the objects it references there.
type podEntry struct {
	tp, tenant, ns string
	names          []string
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

	// Watch strategy.
	running   bool
	gen       uint64        // counts reflector starts; a stopped one's calls are ignored
	synced    bool          // the running reflector has listed
	attempted bool          // the running reflector's first list has succeeded or failed
	attemptCh chan struct{} // closed when attempted becomes true
	cancel    context.CancelFunc
	immutable bool
	up        bool // the reflector's last list or watch succeeded
	removed   bool // no pod references it any more: never restart
}

// manager is the shared core of ConfigMapManager and SecretManager.
type manager[T runtime.Object] struct {
	k     kind[T]
	parts Partitions
	res   Resolver
	o     Options
	gr    schema.GroupResource

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
	return &manager[T]{
		k: k, parts: parts, res: res, o: o,
		gr:    schema.GroupResource{Resource: k.resource},
		base:  base,
		stop:  stop,
		pods:  make(map[types.UID]*podEntry),
		items: make(map[tenancy.Key]*item[T]),
		m:     newMetrics(k.resource),
	}, nil
}

func podRef(pod *corev1.Pod) string {
	return fmt.Sprintf("%s/%s/%s (uid %s)", tenancy.TenantOf(pod), pod.Namespace, pod.Name, pod.UID)
}

// resolve finds the pod's TP: its recorded origin, else (regular tenants
// only) its tenant's TP. There is no default.
func (m *manager[T]) resolve(pod *corev1.Pod) (string, error) {
	tp, ok := m.res.OriginOf(pod.UID)
	if !ok {
		if tenant := tenancy.TenantOf(pod); !tenancy.IsSystem(tenant) {
			tp, ok = m.res.PartitionOfTenant(tenant)
		}
	}
	if !ok {
		return "", fmt.Errorf("kubeletcache: pod %s: its tenant partition is not known (no recorded origin), so its %s cannot be fetched", podRef(pod), m.k.resource)
	}
	if _, exists := m.parts.Get(tp); !exists {
		return "", fmt.Errorf("kubeletcache: pod %s comes from partition %q, which this node is not configured to reach", podRef(pod), tp)
	}
	return tp, nil
}

// RegisterPod records the objects pod references, on the pod's TP, and for
// Watch starts their reflectors. Registering a pod again replaces its
// references (an updated pod); registering it unchanged changes nothing.
// An error means the pod's TP is unknown; nothing is registered then.
func (m *manager[T]) RegisterPod(pod *corev1.Pod) error {
	if pod == nil || pod.UID == "" {
		return errors.New("kubeletcache: RegisterPod needs a pod with a UID")
	}
	tp, err := m.resolve(pod)
	if err != nil {
		return err
	}
	pe := &podEntry{tp: tp, tenant: tenancy.TenantOf(pod), ns: pod.Namespace, names: m.k.names(pod)}
	if tenancy.IsSystem(pe.tenant) {
		pe.tenant = tenancy.SystemTenant
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
		if it == nil {
			it = &item[T]{key: key}
			m.items[key] = it
			it.lastAccess.Store(m.o.Now().UnixNano())
			if m.o.Strategy == Watch {
				it.mu.Lock()
				m.startLocked(it)
				it.mu.Unlock()
			}
		} else if old == nil || old.tp != pe.tp || !slices.Contains(old.names, name) {
			// A new reference: like kubelet, make the next Cache read go
			// to the TP, so a new pod does not start on old data.
			it.mu.Lock()
			it.asOf = time.Time{}
			it.mu.Unlock()
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
			m.stopLocked(it)
			it.mu.Unlock()
		}
	}
}

// lookup finds the item pod's name refers to, or a clear error.
func (m *manager[T]) lookup(pod *corev1.Pod, name string) (*item[T], error) {
	if pod == nil {
		return nil, errors.New("kubeletcache: nil pod")
	}
	m.mu.RLock()
	pe := m.pods[pod.UID]
	var it *item[T]
	if pe != nil && slices.Contains(pe.names, name) {
		it = m.items[pe.key(name)]
	}
	m.mu.RUnlock()
	if pe == nil {
		return nil, fmt.Errorf("kubeletcache: pod %s is not registered with the %s manager", podRef(pod), m.k.resource)
	}
	if it == nil {
		return nil, fmt.Errorf("kubeletcache: %s %q is not referenced by pod %s", m.k.resource, name, podRef(pod))
	}
	return it, nil
}

// get is GetConfigMap and GetSecret. The object returned is shared: callers
// must not modify it.
func (m *manager[T]) get(pod *corev1.Pod, name string) (T, error) {
	var zero T
	it, err := m.lookup(pod, name)
	if err != nil {
		return zero, err
	}
	now := m.o.Now()
	it.lastAccess.Store(now.UnixNano())
	switch m.o.Strategy {
	case Cache:
		it.mu.Lock()
		if !it.asOf.IsZero() && now.Sub(it.asOf) < m.o.TTL {
			obj, have := it.obj, it.have
			it.mu.Unlock()
			if have {
				return obj, nil
			}
			return zero, apierrors.NewNotFound(m.gr, name)
		}
		it.mu.Unlock()
		return m.fetch(it)
	case Watch:
		return m.getWatched(it)
	}
	return m.fetch(it)
}

func (m *manager[T]) client(tp string) (kubernetes.Interface, error) {
	p, ok := m.parts.Get(tp)
	if !ok {
		return nil, fmt.Errorf("kubeletcache: partition %q is not configured", tp)
	}
	return p.Client, nil
}

// requestContext routes a request to the tenant's path on its TP.
func requestContext(ctx context.Context, tenant string) context.Context {
	if tenancy.IsSystem(tenant) {
		return ctx
	}
	return tenancyk8s.WithTenant(ctx, tenant)
}

// fetch asks the TP. A failure to reach it serves the last known object;
// NotFound stays NotFound.
func (m *manager[T]) fetch(it *item[T]) (T, error) {
	var zero T
	p, ok := m.parts.Get(it.key.Partition)
	if !ok {
		return zero, fmt.Errorf("kubeletcache: partition %q is not configured", it.key.Partition)
	}
	c := p.Client
	// A TP that just failed (any request of this node to it, informers
	// included) is not asked again for SyncTimeout: reads get the last
	// known answer at once instead of each waiting on a dead TP.
	if st := p.Status(); !st.Reachable && !st.LastErrorTime.IsZero() && time.Since(st.LastErrorTime) < m.o.SyncTimeout {
		it.mu.Lock()
		if it.have || it.notFound {
			defer it.mu.Unlock()
			if it.lastErr == nil {
				it.lastErr = fmt.Errorf("partition %s unreachable: %s", it.key.Partition, st.LastError)
			}
			m.m.servedStale(it.key.Partition).Inc()
			if it.have {
				return it.obj, nil
			}
			return zero, apierrors.NewNotFound(m.gr, it.key.Name)
		}
		it.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(m.base, m.o.SyncTimeout)
	obj, err := m.k.get(requestContext(ctx, it.key.Tenant), c, it.key.Namespace, it.key.Name)
	cancel()
	now := m.o.Now()
	it.mu.Lock()
	defer it.mu.Unlock()
	switch {
	case err == nil:
		it.obj, it.have, it.notFound, it.asOf, it.lastErr = obj, true, false, now, nil
		return obj, nil
	case apierrors.IsNotFound(err):
		it.obj, it.have, it.notFound, it.asOf, it.lastErr = zero, false, true, now, nil
		return zero, err
	}
	it.lastErr = err
	switch {
	case it.have:
		m.m.servedStale(it.key.Partition).Inc()
		return it.obj, nil
	case it.notFound:
		// The last answer was "does not exist"; that is what is known.
		m.m.servedStale(it.key.Partition).Inc()
		return zero, apierrors.NewNotFound(m.gr, it.key.Name)
	}
	return zero, fmt.Errorf("kubeletcache: getting %s %s: %w", m.k.resource, it.key, err)
}

// Freshness reports how current the object pod's name refers to is.
func (m *manager[T]) Freshness(pod *corev1.Pod, name string) (Freshness, error) {
	it, err := m.lookup(pod, name)
	if err != nil {
		return Freshness{}, err
	}
	now := m.o.Now()
	it.mu.Lock()
	defer it.mu.Unlock()
	return m.freshnessLocked(it, now), nil
}

func (m *manager[T]) freshnessLocked(it *item[T], now time.Time) Freshness {
	f := Freshness{Partition: it.key.Partition, AsOf: it.asOf, LastError: it.lastErr, NotFound: it.notFound}
	switch {
	case m.o.Strategy == Watch && it.immutable:
		f.AsOf = now // an immutable object cannot change
	case m.o.Strategy == Watch && it.running && it.up:
		f.AsOf = now
	case m.o.Strategy == Watch:
		f.Stale = it.running && !it.up
	default:
		f.Stale = it.lastErr != nil
	}
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
		if it.running {
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
		if it.running {
			m.stopLocked(it)
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
		m.stopLocked(it)
		it.mu.Unlock()
	}
	m.mu.Unlock()
	m.stop()
	m.wg.Wait()
}

// ConfigMapManager serves pods' configmaps from each pod's own TP.
type ConfigMapManager struct{ *manager[*corev1.ConfigMap] }

// NewConfigMapManager returns a manager that reaches TPs through parts and
// finds each pod's TP through res. It starts nothing: reflectors start when
// pods are registered (Watch), and Run recycles idle ones.
func NewConfigMapManager(parts Partitions, res Resolver, o Options) (*ConfigMapManager, error) {
	m, err := newManager(configMapKind, parts, res, o)
	if err != nil {
		return nil, err
	}
	return &ConfigMapManager{m}, nil
}

// GetConfigMap returns the configmap called name, as the registered pod's
// TP has it, in the pod's tenant and namespace. The object is shared and
// must not be modified. Errors: the pod is not registered, or does not
// reference name; NotFound from the TP; the TP unreachable with no last
// known object.
func (c *ConfigMapManager) GetConfigMap(pod *corev1.Pod, name string) (*corev1.ConfigMap, error) {
	return c.get(pod, name)
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

// GetSecret is GetConfigMap for secrets.
func (s *SecretManager) GetSecret(pod *corev1.Pod, name string) (*corev1.Secret, error) {
	return s.get(pod, name)
}

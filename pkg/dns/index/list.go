package index

// Kind is a kind of record a partition's list delivers.
type Kind uint8

const (
	// Namespaces are namespace objects.
	Namespaces Kind = iota
	// Services are services.
	Services
	// EndpointSlices are endpoint slices, or core/v1 Endpoints.
	EndpointSlices
	// Pods are pods.
	Pods
)

// objKey names an object of one partition; a namespace object has no name.
type objKey struct{ tenant, ns, name string }

// unlisted is what a list in progress has not delivered yet: objects by
// key, pods by namespace and podID (the Builder keeps no pod names).
type unlisted struct {
	objs map[objKey]struct{}
	pods map[nsPod]struct{}
}

type nsPod struct {
	ns nsKey
	id podID
}

type listKey struct {
	tp   int
	kind Kind
}

// BeginList starts a (re)list of kind in partition tp. Its objects then
// come through the kind's Set and Delete calls, as many as the list has, in
// pages if need be, and EndList deletes whatever the list lacked. Nothing
// waits to be applied: a list takes no memory beyond its records, and a
// relist of an unchanged partition changes nothing. A list that fails half
// way has applied what it read, which is as true as the watch events it
// replaces; the next BeginList starts over.
func (b *Builder) BeginList(tp int, kind Kind) {
	if !b.valid(tp) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// The records there now, each struck off as the list delivers it. On a
	// first list there are none, so the set costs nothing.
	u := &unlisted{objs: map[objKey]struct{}{}, pods: map[nsPod]struct{}{}}
	for k, r := range b.tps[tp] {
		switch kind {
		case Namespaces:
			if r.object {
				u.objs[objKey{k.tenant, k.ns, ""}] = struct{}{}
			}
		case Services:
			for name := range b.serviceNames(tp, r) {
				u.objs[objKey{k.tenant, k.ns, name}] = struct{}{}
			}
		case EndpointSlices:
			for name := range r.sliceNames {
				u.objs[objKey{k.tenant, k.ns, name}] = struct{}{}
			}
		case Pods:
			for id := range r.pods {
				u.pods[nsPod{k, id}] = struct{}{}
			}
		}
	}
	if b.lists == nil {
		b.lists = map[listKey]*unlisted{}
	}
	b.lists[listKey{tp, kind}] = u
}

// EndList ends the list BeginList started: every object of its kind and
// partition that it did not deliver is deleted.
func (b *Builder) EndList(tp int, kind Kind) {
	if !b.valid(tp) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	lk := listKey{tp, kind}
	if b.ended == nil {
		b.ended = map[listKey]bool{}
	}
	b.ended[lk] = true
	u := b.lists[lk]
	delete(b.lists, lk)
	if u == nil {
		return
	}
	for k := range u.pods {
		if r := b.tps[tp][k.ns]; r != nil {
			b.dropPod(tp, r, k.id)
		}
	}
	for k := range u.objs {
		switch kind {
		case Namespaces:
			b.setNamespace(tp, k.tenant, k.ns, false)
		case Services:
			b.deleteService(tp, k.tenant, k.ns, k.name)
		case EndpointSlices:
			b.deleteEndpointSlice(tp, k.tenant, k.ns, k.name)
		}
	}
}

// listed strikes an object off the list of its kind in progress, if any.
// Callers hold b.mu.
func (b *Builder) listed(tp int, kind Kind, k nsKey, name string) {
	if len(b.lists) == 0 {
		return
	}
	if u := b.lists[listKey{tp, kind}]; u != nil && len(u.objs) > 0 {
		delete(u.objs, objKey{k.tenant, k.ns, name})
	}
}

// listedPod is listed for pod id.
func (b *Builder) listedPod(tp int, k nsKey, id podID) {
	if len(b.lists) == 0 {
		return
	}
	if u := b.lists[listKey{tp, Pods}]; u != nil && len(u.pods) > 0 {
		delete(u.pods, nsPod{k, id})
	}
}

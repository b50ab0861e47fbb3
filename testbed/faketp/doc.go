// Package faketp runs fake Arktos tenant partitions (TPs) in process: real
// HTTP API servers, JSON only, that real client-go informers and the real
// kubectl use. It is tpkit's test bed; cmd/fake-tp is the same as a program.
//
// Use from a test:
//
//	c := faketp.StartT(t, faketp.Options{Partitions: 3}) // tp1..tp3, stopped at the end
//	cs, _ := kubernetes.NewForConfig(tenancyk8s.WrapConfig(c.TP("tp1").RESTConfig()))
//	_ = c.TP("tp2").Seed(pod, svc)                  // or SeedFiles, c.SeedDir, Generate
//	_ = c.TP("tp3").Restart(ctx)                     // same port, same data
//	flag := c.TenantServerKubeconfig()               // "…/tp1.kubeconfig,…/tp2.kubeconfig,…"
//
// What a TP serves:
//   - discovery (/api, /apis, /version as Arktos 1.0; every resource marked
//     "tenanted" as Arktos does), /healthz, /livez, /readyz (503 while
//     Options.Loading holds it, until Cluster.DoneLoading), /metrics;
//   - core/v1 tenants (cluster-scoped), namespaces (tenant-scoped, as in
//     Arktos), pods (and pods/binding), services, endpoints, configmaps,
//     secrets; apps/v1 daemonsets; no discovery.k8s.io (Arktos has none)
//     unless Options.EndpointSlices, which serves EndpointSlices that the
//     server mirrors from the Endpoints: one slice per subset and address
//     family, named <endpoints>-ipv4 and -ipv6, labelled
//     kubernetes.io/service-name and endpointslice.kubernetes.io/managed-by
//     endpointslicemirroring-controller.k8s.io. Clients may write slices of
//     their own; mirrored ones are put back when a client changes them.
//     Seeding a slice into a TP without the option is refused;
//   - Arktos paths /api/v1/tenants/{t}/namespaces/{ns}/{res}[/{name}[/{sub}]],
//     /api/v1/tenants/{t}/{res} (one tenant, all namespaces) and the same under
//     /apis/{g}/{v}; /api/v1/tenants/all/{res} lists and watches every
//     tenant. A short path (/api/v1/pods, /api/v1/namespaces/ns/pods) is
//     the caller's tenant (Identity.Tenant; system for the admin and for
//     requests without credentials), never every tenant, as in Arktos;
//   - get, list (label and field selectors, limit/continue), watch
//     (resourceVersion, bookmarks, timeoutSeconds), create, update (409 on
//     a stale resourceVersion), patch (JSON, merge, strategic merge),
//     delete, and deletecollection where kube-apiserver 1.18 has it (not on
//     tenants, namespaces and services).
//
// Responses are JSON even when protobuf is asked for (protobuf request bodies
// of built-in types are read); kubectl get is answered with a meta.k8s.io
// Table with Arktos's columns (pods with HashKey, namespaces with Tenant,
// tenants with StorageID). A minimal OpenAPI v3 tells kubectl to validate on
// the server (whose fieldValidation is ignored), and an empty OpenAPI v2
// lets it validate the items of a kind: List on the client (kubectl create
// -f list.yaml); there is no server-side apply. kubectl 1.32 warns about
// the version skew, as against Arktos.
//
// Objects carry metadata.hashKey (from the uid) and selfLink as Arktos's do;
// list items carry no kind and apiVersion, as kube-apiserver's lists.
//
// Objects are stored as JSON carrying metadata.tenant (from the path; Tenant
// objects have none). A metadata.tenant in a body that contradicts the path
// is a 400. Arktos's lifecycle holds: an object can only be created in an
// existing tenant (404 tenants "x" not found) and namespace (404); a Tenant
// needs spec.storageClusterId "0".."63" and gets the finalizer "arktos",
// a namespace "kubernetes", both phase Active. Every TP starts with the
// system tenant's default, kube-system, kube-public and kube-node-lease
// namespaces. Seed and Generate are never refused: they create the tenants
// and namespaces their objects need. Deleting a namespace or a tenant
// deletes what is in it at once (no Terminating phase).
//
// Controllers (Options.Controllers; by default the tenant and endpoints
// controllers of Arktos's controller manager) run synchronously after every
// change (API writes, Seed), before the request that made it is answered,
// so tests need no sleeps; each of their writes is a store write of its
// own, without admission. Generate writes, in its batches, what they
// would write for its pods and services (TestGenerateAsSeeded). They are:
//   - tenant: the Tenant "system" exists (without it, GET is 404 as on a
//     TP without a controller manager), and every new tenant gets the
//     namespaces default, kube-system and kube-public;
//   - endpoints: the core/v1 Endpoints of every service with a selector
//     list its pods (same tenant and namespace) that are on a node, have a
//     pod IP, are not being deleted and have not ended: Ready ones in
//     addresses, others in notReadyAddresses, with nodeName, hostname and
//     targetRef (with tenant), ports resolved through container port names;
//     labels are the service's. A deleted service's Endpoints go; those of
//     services without a selector and of ExternalName services are the
//     clients'.
//
// Pods: there is no scheduler or kubelet. POST .../pods/{name}/binding sets
// spec.nodeName (409 if bound), a status PATCH sets the pod IP and Ready,
// and then the endpoints controller counts the pod. A DELETE marks the pod
// (deletionTimestamp, deletionGracePeriodSeconds: a MODIFIED event, which is
// what DELETE answers) and deletes it at once, also when it is bound:
// unlike Arktos, no kubelet is waited for. Pods get no service account.
// Deletion ignores finalizers and does not collect dependents. Status is
// the server's: a create through HTTP drops the client's status (pods
// start Pending), and only /status changes it; Seed and Generate keep
// status as given. Server defaults are Arktos's for the served kinds, and
// fields Arktos's (pre-dual-stack) types lack, such as status.podIPs and
// spec.clusterIPs, are dropped from HTTP writes.
//
// Services: each TP is an API server with its own service cluster IP range
// (Options.ServiceCIDRs; fake-tp --service-cidr), as Arktos's TPs each have
// their own --service-cluster-ip-range. By default TP k of a Cluster
// (counting from 0, in the order of the names) gets 10.(96+k).0.0/16:
// tp1 10.96.0.0/16, tp2 10.97.0.0/16, and so on, up to 160 TPs
// (DefaultServiceCIDR); separate Clusters (processes) do not know each
// other, so give them ranges. A service without spec.clusterIP gets the
// next free address of its TP's range from the 11th (10.96.0.11 in tp1):
// the first ten are left to fixed addresses such as kube-dns's .10, and an
// address a stored service holds is never handed out again. An address a
// service asks for is kept, also outside the range and also when another
// service has it (a kube-apiserver refuses both; tests and seeds rely on
// fixed addresses). A dry run allocates nothing. On update the cluster IP
// cannot change while the service has one (422 "field is immutable", as in
// Arktos), and a service that stops being ExternalName gets one. Services
// get Arktos's defaults on every write (type ClusterIP, sessionAffinity
// None, ports TCP with their port as targetPort) and an empty
// status.loadBalancer on create, and nothing of dual-stack: no clusterIPs,
// ipFamilies or ipFamilyPolicy (sample 30). No node ports are allocated
// for NodePort and LoadBalancer services.
//
// Identity: requests without credentials act as the admin (AdminUser, group
// system:masters, tenant system); a TP's kubeconfig carries an admin token;
// KubeconfigFor writes kubeconfigs for other users; admins may impersonate
// (kubectl --as, --as-group, Impersonate-Extra-tenant). There is no
// authorization: identity only feeds admission. TPs serve plain HTTP, and
// kubectl (1.32) sends no bearer token over plain HTTP, so kubectl with a
// KubeconfigFor file acts as the admin: from kubectl, act as another user
// with --as and --as-group. client-go's rest.Config does send the token.
//
// Admission: each TP runs an admission.Chain (Options.Plugins, by default
// DefaultPlugins) on create (pods/binding included), update and delete of
// clients (not of the controllers) with an admission.Request that the
// adapter (pkg/admission/k8s) makes of the typed objects: group, resource,
// kind, tenant, namespace, name, the object's name, whether the stored
// object is being deleted, and the user. A plugin's refusal is answered as
// the adapter's API status.
//
// Versions, as Arktos (kube-apiserver 1.18 with its watch cache): each
// resource has a watch window of its last 100 events (Options.History); a
// watch from an older resourceVersion gets a 200 stream whose only event is
// an ERROR with 410 Expired, while a resource with fewer events reaches back
// to the TP's start. Lists honour resourceVersion: "" the latest, "0" any
// (in one page), N with a limit or resourceVersionMatch=Exact exactly N
// (rebuilt from the revision log; a plain 410 once compacted, see
// TP.Compact), N otherwise not older than N. Pages of a paged list are one
// snapshot.
//
// Watch-list (client-go's WatchListClient, on by default since v0.35): a TP
// ignores sendInitialEvents and resourceVersionMatch on watches by default,
// as Arktos does; against it a client-go v0.37 reflector with WatchListClient
// on never syncs, so tpkit's programs must turn the feature off for real
// TPs. Options.WatchList can instead serve it (as kube-apiserver 1.32+) or
// reject it (422, as kube-apiserver with the feature off; client-go falls
// back to list).
//
// Faults for tests, per TP, from Go (TP.SetOutage, CloseWatches, SetLatency,
// Compact) and over HTTP (AdminHandler).
//
// Master service: every TP serves the Service and Endpoints
// default/kubernetes of the system tenant, as every Arktos API server
// writes them (samples 34, 37; Arktos's kube-proxy waits for these
// Endpoints at start): cluster IP the first address of the TP's range,
// port 443 named https to the TP's own port, Endpoints with one subset
// (serviceGroupId "0") at the TP's address (Options.AdvertiseAddress,
// else the listen host, else the host's default address) and port. They
// are reconciled at every start, written only when they differ (a data
// file loaded on another port moves them, keeping their uids), and count
// in every list of services and endpoints as they do against Arktos.
//
// Differences from Arktos on purpose (TestArktosReplay replays the recorded
// Arktos TPs of testdata/arktos and lists them): no service accounts, live
// watch events carry metadata.selfLink, and a bound pod is deleted at once
// (no kubelet).
//
// Invariants: input never panics the server and never gets a 500: malformed
// paths and bodies get a metav1.Status with a 4xx code and the reason
// kube-apiserver would give. Every object served carries the
// resourceVersion it was written at, from one counter per TP.
//
// It moved from pkg/faketp to the test bed's own wing, its API
// unchanged: import github.com/tpkit-dev/tpkit/testbed/faketp (and
// testbed/faketp/store, testbed/faketp/manifest) where
// github.com/tpkit-dev/tpkit/pkg/faketp was; pkg/ now holds only what the
// programs and the Arktos cores ship.
package faketp

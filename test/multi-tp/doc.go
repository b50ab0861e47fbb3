// Package multitp is tpkit's end-to-end suite: it runs the programs
// together the way a node and its cluster would, against three Arktos-shaped
// tenant partitions (TPs), and shows the mission scenario end to end. It
// holds no library code; everything is in its tests.
//
// TestMain builds the real binaries (cmd/fake-tp, cmd/partition-dns,
// cmd/tp-admission-webhook) once. TestMission then starts, as processes:
//   - fake-tp serving tp1 and tp2, and a second fake-tp serving tp3 alone,
//     so that tp3 can be killed (SIGKILL) to make one TP unreachable;
//   - partition-dns on all three kubeconfigs (--tenant-server-kubeconfig).
//
// The seed (testdata/tps) has the system tenant in every TP, with
// kube-system/kube-dns in tp1 and in tp2 (different cluster IPs and
// endpoints), a node-agent DaemonSet, and a node-agent pod and configmap of
// the same names in tp1 and tp2; regular tenant acme in tp2 and zeta in tp3,
// each with a service default/web.
//
// The subtests, in order (they share the running programs):
//  1. the real kubectl against tp2: tenant paths and metadata.tenant, and
//     the DaemonSet admission (only the system tenant may have one);
//  2. DNS over real UDP and TCP: each tenant's web gets its own cluster IP,
//     the legacy kube-dns name answers from the querier's TP, a missing
//     name is NXDOMAIN with the SOA;
//  3. a change made with kubectl reaches partition-dns's answers;
//  4. the library parts in process against the same TPs: pkg/kubeproxy keeps
//     the two kube-dns services apart, and pkg/tporigin's ObjectKey gives
//     tp2's pod tp2's configmap;
//  5. the admission webhook program gives the same decision as fake-tp;
//  6. a TP outage: tp3's process is killed, partition-dns keeps answering
//     zeta's name (never NXDOMAIN) and reports tp3 as stale;
//  7. a second partition-dns started during the outage is ready after
//     --partition-sync-timeout and answers from tp1 and tp2;
//  8. tp3 comes back on the same port and data (--data-dir): both
//     partition-dns servers report it ok, and a change made in it (through
//     client-go, so this runs without kubectl) reaches their answers;
//  9. SIGTERM stops partition-dns and fake-tp with exit status 0.
//
// TestArktosTPs and TestArktosRestarts run against two Arktos-shaped TPs:
// two fake-tp processes in make test, two real Arktos TPs from
// hack/arktos-lab.sh with ARKTOS_BIN set (make check-arktos). The
// first checks names, the node libraries, a new service and a stopped TP;
// the second restarts each TP's API server while both TPs change, once
// over a compacted store, and holds partition-dns, the kube-proxy view and
// the origin tracker to a list of the TP within 10 seconds of each restart.
//
// Every child is killed in a test cleanup (and by the kernel if the test
// binary dies), and the output of every child is printed when a test fails.
// kubectl subtests skip with a message when kubectl is not installed.
package multitp

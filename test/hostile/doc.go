// Package hostile runs the attacks of hostile and faulty input against
// tpkit's real programs and asserts the bound each one must hold. It holds
// no library code; everything is in its tests.
//
// TestMain builds cmd/fake-tp, cmd/partition-dns and
// cmd/tp-admission-webhook once. The tests, by attack:
//   - TestForwardFlood: random names outside the zones, sent the way
//     dnsperf sends at full speed but with 2,000 queries outstanding, at a
//     partition-dns whose upstream never answers, so that the forwarding
//     bounds are hit and the rest of the flood is dropped. The server stays
//     under 100 MB RSS and 2,000 goroutines, and the cluster name, asked
//     the way dnsperf -c 2 -q 100 asks, keeps at least 0.8 of the QPS it
//     gets alone (three alternating 1 s rounds alone and under the flood:
//     a ratio in the same run, not a timing limit).
//   - TestProtocolAttacks: NOTIFY and UPDATE get NOTIMP and leave the
//     forward cache as it was; no UDP answer exceeds 1232 bytes, whatever
//     EDNS size is asked (TC set, the whole answer over TCP); a source
//     outside --allow-recursion gets REFUSED for outside names and answers
//     for cluster names; malformed messages get FORMERR.
//   - TestWebhookIdleConnections: 10,000 idle keep-alive TLS connections
//     to tp-admission-webhook are closed after --http-idle-timeout, not
//     before, and admission reviews are answered while they are open.
//   - TestDamagedOriginFiles: every truncation and a sweep of damaged
//     pages of a tporigin file: Open never kills the process, reports a
//     *CorruptError or opens, and with Rebuild always gives a working
//     tracker. (pkg/tporigin is a library; its programs are Arktos's kubelet
//     and tpkit's node components.)
//   - TestNodeCacheRefusesBadAddresses: node-cache refuses broadcast,
//     multicast and unspecified --local-ip values with exit status 2.
//
// Elsewhere, because they need their package's internals or a network
// namespace: node-cache's teardown removes only its own addresses
// (pkg/nodelocal), fake-tp keeps every change across a restart with --seed
// and --data-dir (cmd/fake-tp TestProgramServesSeedsFaultsAndPersists),
// slow and idle HTTP clients and the accept loop's back-off (pkg/ops,
// testbed/faketp, pkg/dns/server).
package hostile

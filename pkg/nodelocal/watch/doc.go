// Package watch is the NodeLocal HA switch, the "USE LOCAL?" of the KEP "NodeLocal DNSCache to beta": a
// watcher, run as its own process so it outlives a crashed or OOM-killed
// cache, that probes the cache with a real DNS query and keeps the iptables
// rule set in the matching state.
//
// While the cache answers, every rule of the set is in place, and the NOTRACK
// rules for the kube-dns service IP make that traffic skip kube-proxy's DNAT
// and reach the cache. After FailureThreshold failed probes in a row the
// watcher removes those switch rules, so queries to the service IP are
// tracked, DNATed by kube-proxy, and answered by the kube-dns endpoints.
// After SuccessThreshold good probes in a row it puts them back.
//
// Invariants:
//   - The watcher is the only writer of the rule set while it runs (run the
//     cache with --setup-iptables=false next to it); it re-ensures the set
//     for the current state every sync interval and at once on a flip.
//   - It starts in the state it finds: switch rules present means "local",
//     so a watcher restart never interrupts a healthy cache; rules that a
//     dead cache left behind are removed after FailureThreshold probes.
//   - The probe is CHAOS TXT id.server. to the link-local IP, which the cache
//     answers itself: it tests the cache, not its upstream, and never goes
//     through kube-proxy.
//   - On shutdown it removes every rule it owns (the safe state: kube-dns
//     endpoints), unless SkipTeardown.
package watch

// Package netif puts the NodeLocal cache's IPs on an interface, so the cache
// can bind them and the kernel delivers packets for them locally.
//
// It prefers a dummy interface named nodelocaldns (`ip link add nodelocaldns
// type dummy`), as upstream NodeLocal DNSCache does. Where the kernel has no
// dummy driver (no module, a restricted sandbox), it falls back to another
// interface, by default the loopback "lo": an address on lo is local to the
// node in the same way, and the IPs are /32 (/128) so no route is added
// beyond the address itself. The fallback is chosen once per Manager and
// logged; set Options.Fallback to "" to fail instead.
//
// Invariants: only the configured IPs are ever added or removed; on the
// fallback interface nothing else is touched, and the fallback interface is
// never deleted. The dummy interface is deleted on Teardown (it holds nothing
// else). Ensure is idempotent and cheap when everything is in place.
//
// It shells out to `ip` (iproute2) rather than using netlink directly: the
// cache needs a handful of calls every sync interval, and iproute2 is on every
// node image, so a netlink module would add weight without benefit.
package netif

/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package ipaddr is an IP address as a small comparable value: the part of
// net/netip (Go 1.18) that tpkit's cores need, written with Go 1.13's
// standard library so that an Arktos tree built with Go 1.13 can vendor
// them. pkg/kubeproxy (cluster IPs and endpoints in a Snapshot) and
// pkg/dns/names (addresses in pod and reverse names) use it.
//
// Names and behaviour follow net/netip, so moving code between the two is a
// change of import: ParseAddr, AddrFrom4, AddrFrom16, Addr.Is4, Is6, Is4In6,
// Unmap, Compare, Less, As4, As16, BitLen, String; AddrPort,
// AddrPortFrom, AddrPort.String and AppendTo. The tests compare every one
// with net/netip. Zones are not supported: ParseAddr rejects
// "fe80::1%eth0", where net/netip would keep the zone for the caller to
// reject.
//
// Invariants:
//   - The zero Addr is invalid, and == is address equality: an IPv4
//     address and its IPv4-mapped IPv6 form are different Addrs, as in
//     net/netip (Unmap makes them equal).
//   - ParseAddr accepts exactly what net/netip.ParseAddr accepts without a
//     zone, with whichever Go it is built: it reads IPv4 itself, and checks
//     the shape of IPv6 before net.ParseIP reads it (net.ParseIP of Go 1.13
//     also took decimal fields with leading zeros).
//   - Nothing here allocates except String, AppendTo into a short buffer
//     and ParseAddr's errors (and net.ParseIP's result on Go releases that
//     do not keep it on the stack).
//   - It is a core (test/vendorable): standard library only, language and
//     library of Go 1.13.
package ipaddr

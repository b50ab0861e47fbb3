// Package arktoslab holds what tpkit's labs against real Arktos binaries
// share (test/arktos-node, test/arktos-cluster): starting an Arktos program
// with its log and stopping it, polling, plain JSON requests to an Arktos API
// server's insecure port, and a TCP forwarder that lets a namespace's pods
// reach an API server bound to loopback. It imports only the standard
// library; the labs are behind build tags, this package is not, so `make
// test` vets and tests it.
package arktoslab

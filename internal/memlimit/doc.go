// Package memlimit sizes the Go runtime's soft memory limit to the
// container's: it reads the memory limit of the process's cgroup (v2, or
// v1's memory controller) and parses the --memory-limit flag that
// partition-dns offers. With the runtime's limit below the container's,
// the collector works harder as memory nears it instead of letting the
// kernel kill the process.
package memlimit

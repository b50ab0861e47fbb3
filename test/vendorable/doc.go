// Package vendorable holds the checks that tpkit's cores, the packages an
// Arktos build vendors, stay vendorable: their dependencies (cores_test.go
// lists each core and what it may import, with the reason) and the oldest
// Go toolchain they build with (MinGo). The checks are tests; this package
// has no code of its own.
package vendorable

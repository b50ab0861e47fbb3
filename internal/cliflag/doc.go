// Package cliflag holds the small command-line helpers that tpkit's programs
// and option structs share, so that every comma-separated flag splits the
// same way: items are trimmed and empty items dropped.
package cliflag

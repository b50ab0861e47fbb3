// Package makefile checks the Makefile's front door: `make help` names every
// target the Makefile has, and every .PHONY name is a target. The check is a
// test; this package has no code of its own.
package makefile

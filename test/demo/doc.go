// Package demo checks hack/demo.sh, the script behind `make demo`, where
// that is cheap: it refuses to start, at once and naming the variable to
// change, when one of its ports is already taken. It holds no library
// code; everything is in its tests.
//
// The rest of the script's failure handling (a program that exits early
// or never becomes ready fails the demo and keeps its logs) needs the
// programs built and started, and is checked by hand (README.md, make
// demo).
package demo

// Package newlang uses language features newer than Go 1.13. Compiled in a
// module whose go line is 1.13, the compiler must report, on each line with
// a "want:" comment, an error containing the comment's text
// (TestLanguageCheckRejectsNewerGo).
package newlang

var anything any = 1 // want: predeclared any requires go1.18

// Max is generic.
func Max[T int | float64](a, b T) T { // want: type parameter requires go1.18
	if a > b {
		return a
	}
	return b
}

// Smaller uses the min builtin.
func Smaller(a, b int) int { return min(a, b) } // want: built-in min requires go1.21

// Sum ranges over an integer.
func Sum(n int) int {
	s := 0
	for i := range n { // want: requires go1.22
		s += i
	}
	return s
}

// First converts a slice to an array pointer.
func First(s []byte) *[4]byte { return (*[4]byte)(s) } // want: conversion of slice to array pointer requires go1.17

// ReadCloser embeds two interfaces with the same method, Close: allowed
// from Go 1.14 on.
type ReadCloser interface {
	Reader
	Closer // want: duplicate method Close
}

// Reader has Close too.
type Reader interface {
	Read([]byte) (int, error)
	Close() error
}

// Closer is io.Closer.
type Closer interface{ Close() error }

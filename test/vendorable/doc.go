// Package vendorable holds the checks that tpkit's cores, the packages an
// Arktos build vendors, stay vendorable: their dependencies (cores_test.go
// lists each core and what it may import, with the reason), and the Go they
// are written for, Go 1.13 (MinLang; Arktos builds with Go 1.13.9), in
// language and standard library:
//
//   - TestCoresCompileAtMinLang compiles them in a module whose go line is
//     1.13, so the compiler refuses newer language features;
//     TestLanguageCheckRejectsNewerGo shows that it does (testdata/newlang).
//   - TestCoresUseGo113Std type-checks them and fails on any standard
//     package or symbol that $GOROOT/api says Go added after 1.13, as vet's
//     stdversion analyzer does; TestStdCheckerReports shows that it reports
//     each kind (testdata/newstd).
//   - TestCoresBuildWithMinGo vets them with the oldest Go installable here
//     (MinGo, 1.19) against Arktos's bbolt pin.
//
// The checks are tests; this package has no code of its own.
package vendorable

// Package arktoshttp is a minimal Arktos-shaped list/watch HTTP handler for the
// unit tests of packages below testbed/faketp (tenancy, partition), which cannot
// use fake-tp without an import cycle or before it exists. It serves one
// core/v1 resource from raw JSON objects; everything else gets 404.
// Multi-TP behaviour is tested against testbed/faketp, not here.
package arktoshttp

package server

import (
	"context"
	"testing"
)

func testContext(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

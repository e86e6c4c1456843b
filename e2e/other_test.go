//go:build !linux

package e2e

import (
	"runtime"
	"testing"
)

func TestEndToEnd(t *testing.T) {
	t.Skipf("the end-to-end tests need Linux (process groups, /proc, signals); this is %s", runtime.GOOS)
}

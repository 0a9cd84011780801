package metrics_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/leaktest"
)

func TestMain(m *testing.M) {
	sandbox.Main() // this binary launches the sandboxed stdio servers
	goleak.VerifyTestMain(leaktest.M(m))
}

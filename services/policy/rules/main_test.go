package rules_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/internal/testkit/leaktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(leaktest.M(m)) }

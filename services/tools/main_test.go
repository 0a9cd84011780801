package tools_test

import (
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
)

func TestMain(m *testing.M) { leaks.VerifyTestMain(m) }

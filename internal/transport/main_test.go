package transport

import (
	"testing"

	"sshfsm/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

package web_test

import (
	"os"
	"testing"

	"github.com/vigilhq/vigil/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

package config

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's example services file must stay valid.
func TestReadmeExampleParses(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	text := string(readme)
	start := strings.Index(text, "### The services file")
	require.NotEqual(t, -1, start, "README section missing")
	block := text[start:]
	open := strings.Index(block, "```yaml\n")
	require.NotEqual(t, -1, open)
	block = block[open+len("```yaml\n"):]
	block = block[:strings.Index(block, "```")]

	cfg, err := ParseEnv([]byte(block), []string{"OPS_TOKEN=secret"})
	require.NoError(t, err)
	require.Len(t, cfg.Services, 1)
	require.Equal(t, "inventory", cfg.Services[0].Name)
	require.Len(t, cfg.Alerts.Webhooks, 1)
}

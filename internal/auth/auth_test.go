package auth_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/auth"
)

func TestPasswordHash(t *testing.T) {
	t.Parallel()
	h, err := auth.HashPassword("correct horse")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(h, "$argon2id$v=19$m=65536,t=3,p=2$"), h)
	require.NotContains(t, h, "correct horse")
	require.True(t, auth.CheckPassword(h, "correct horse"))
	require.False(t, auth.CheckPassword(h, "correct horsE"))
	require.False(t, auth.CheckPassword("garbage", "correct horse"))
	require.False(t, auth.CheckPassword("$argon2id$v=19$m=65536,t=3,p=2$!!$!!", "x"))

	h2, err := auth.HashPassword("correct horse")
	require.NoError(t, err)
	require.NotEqual(t, h, h2, "each hash has its own salt")

	_, err = auth.HashPassword("short")
	require.ErrorIs(t, err, auth.ErrWeakPassword)
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	a, err := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, err)
	b, err := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	require.True(t, strings.HasPrefix(a, "vgl_"))
	require.Len(t, auth.HashSecret(a), 32)
	require.Equal(t, auth.HashSecret(a), auth.HashSecret(a))
}

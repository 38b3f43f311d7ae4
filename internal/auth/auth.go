// Package auth holds the credentials side of accounts: argon2id password
// hashes, random session ids and API tokens (stored only as SHA-256 hashes),
// and the roles that decide who may change what.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Roles, from most to least powerful.
const (
	RoleAdmin  = "admin"  // everything, including users, tokens of others and the audit log
	RoleEditor = "editor" // services and jobs of the groups it is a member of
	RoleViewer = "viewer" // read only
)

// ValidRole reports whether r is one of the three roles.
func ValidRole(r string) bool {
	return r == RoleAdmin || r == RoleEditor || r == RoleViewer
}

// RoleRank orders roles: a token may carry its owner's role or a lower one.
func RoleRank(r string) int {
	switch r {
	case RoleAdmin:
		return 3
	case RoleEditor:
		return 2
	case RoleViewer:
		return 1
	}
	return 0
}

// argon2id parameters: RFC 9106's second recommended option (64 MiB, 3 passes).
const (
	argonTime    = 3
	argonMemory  = 64 * 1024
	argonThreads = 2
	argonKeyLen  = 32
	saltLen      = 16
	// MinPasswordLength is the shortest password accepted for a new account.
	MinPasswordLength = 8
)

// ErrWeakPassword is returned for a password shorter than MinPasswordLength.
var ErrWeakPassword = fmt.Errorf("password is shorter than %d characters", MinPasswordLength)

// HashPassword returns an argon2id hash in PHC string form
// ($argon2id$v=19$m=65536,t=3,p=2$salt$key), so the parameters can change later
// without invalidating stored hashes.
func HashPassword(password string) (string, error) {
	if len(password) < MinPasswordLength {
		return "", ErrWeakPassword
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// CheckPassword reports whether password matches the stored hash. A malformed
// hash never matches.
func CheckPassword(hash, password string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var memory, time uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &memory, &time, &threads); err != nil {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, time, memory, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// dummyHash is checked against when the account does not exist, so a login for
// an unknown name takes as long as one with a wrong password.
var dummyHash, _ = HashPassword("not-a-real-password")

// CheckNoPassword spends the time of one CheckPassword and reports false.
func CheckNoPassword(password string) bool {
	CheckPassword(dummyHash, password)
	return false
}

// TokenPrefix marks Vigil's API tokens, so a leaked one is recognisable in a scan.
const TokenPrefix = "vgl_"

// NewSecret returns a random 256-bit value, URL-safe, with prefix in front.
func NewSecret(prefix string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashSecret is how session ids and tokens are stored and looked up.
// Both are 256 random bits, so a fast hash is enough: there is nothing to guess.
func HashSecret(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// ErrInvalidCredentials is the one error a failed login shows, whatever failed.
var ErrInvalidCredentials = errors.New("unknown user or wrong password")

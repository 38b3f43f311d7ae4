package monitoring

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrExists is returned when a create would duplicate a unique name.
var ErrExists = errors.New("already exists")

// User is an account. PasswordHash is only read for a login.
type User struct {
	ID           int64
	Name         string
	Role         string
	PasswordHash string
	Groups       []string // for an editor: the groups it may change
	CreatedAt    time.Time
}

// UserCreateParams describe a new account; PasswordHash comes from auth.HashPassword.
type UserCreateParams struct {
	Name         string
	Role         string
	PasswordHash string
	Groups       []string // group names; must exist
}

// UserCreate inserts an account and its group memberships. ErrExists when the
// name is taken; ErrNotFound when a group does not exist.
func (s *Store) UserCreate(ctx context.Context, p UserCreateParams) (int64, error) {
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		const insert = `INSERT INTO vigil_user (name, role, password_hash) VALUES ($1, $2, $3) RETURNING id`
		if err := tx.QueryRow(ctx, insert, p.Name, p.Role, p.PasswordHash).Scan(&id); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("user %q: %w", p.Name, ErrExists)
			}
			return err
		}
		const member = `
INSERT INTO vigil_user_group (user_id, group_id)
SELECT $1, g.id FROM monitoring_group g WHERE g.name = ANY($2::text[])`
		tag, err := tx.Exec(ctx, member, id, p.Groups)
		if err != nil {
			return err
		}
		if int(tag.RowsAffected()) != len(p.Groups) {
			return fmt.Errorf("groups %v: %w", p.Groups, ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("create user: %w", err)
	}
	return id, nil
}

// UserCreateFirstAdmin creates an admin only when no account exists yet, so
// replicas starting together with VIGIL_ADMIN_PASSWORD create it once. It
// reports whether it created the account.
func (s *Store) UserCreateFirstAdmin(ctx context.Context, name, passwordHash string) (bool, error) {
	var created bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('vigil.first_admin'))`); err != nil {
			return err
		}
		const insert = `
INSERT INTO vigil_user (name, role, password_hash)
SELECT $1, 'admin', $2 WHERE NOT EXISTS (SELECT 1 FROM vigil_user)`
		tag, err := tx.Exec(ctx, insert, name, passwordHash)
		created = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("create first admin: %w", err)
	}
	return created, nil
}

// UserByName returns an account with its password hash and groups; ErrNotFound.
func (s *Store) UserByName(ctx context.Context, name string) (User, error) {
	return s.userWhere(ctx, `u.name = $1`, name)
}

// UserByID returns an account with its groups; ErrNotFound.
func (s *Store) UserByID(ctx context.Context, id int64) (User, error) {
	return s.userWhere(ctx, `u.id = $1`, id)
}

func (s *Store) userWhere(ctx context.Context, where string, arg any) (User, error) {
	q := `
SELECT u.id, u.name, u.role, u.password_hash, u.created_at,
       coalesce(array_agg(g.name ORDER BY g.name) FILTER (WHERE g.name IS NOT NULL), '{}')
FROM vigil_user u
LEFT JOIN vigil_user_group ug ON ug.user_id = u.id
LEFT JOIN monitoring_group g ON g.id = ug.group_id
WHERE ` + where + `
GROUP BY u.id`
	var u User
	err := s.pool.QueryRow(ctx, q, arg).Scan(&u.ID, &u.Name, &u.Role, &u.PasswordHash, &u.CreatedAt, &u.Groups)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, ErrNotFound
	}
	if err != nil {
		return User{}, fmt.Errorf("user: %w", err)
	}
	return u, nil
}

// SessionParams start a session. The lifetimes are measured on the DB clock.
type SessionParams struct {
	UserID    int64
	IDHash    []byte // auth.HashSecret of the cookie's value
	CSRFToken string
	Idle      time.Duration
	Absolute  time.Duration
}

// SessionCreate stores a new session.
func (s *Store) SessionCreate(ctx context.Context, p SessionParams) error {
	const q = `
INSERT INTO vigil_session (id_hash, user_id, csrf_token, idle_until, expires_at)
VALUES ($1, $2, $3,
        clock_timestamp() + least($4::bigint, $5::bigint) * interval '1 millisecond',
        clock_timestamp() + $5::bigint * interval '1 millisecond')`
	if _, err := s.pool.Exec(ctx, q, p.IDHash, p.UserID, p.CSRFToken, p.Idle.Milliseconds(), p.Absolute.Milliseconds()); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// Session is a live session and its account.
type Session struct {
	User      User
	CSRFToken string
	ExpiresAt time.Time
}

// SessionTouch looks a session up by its hash and, when it has expired
// neither by idleness nor absolutely, pushes its idle expiry forward (never
// past the absolute one). ErrNotFound for an unknown or expired session.
//
// Open pages refresh every few seconds, so the row is rewritten at most once
// a minute: idle expiry is that much coarser, and the table stays small.
func (s *Store) SessionTouch(ctx context.Context, idHash []byte, idle time.Duration) (Session, error) {
	const q = `
WITH live AS (
    SELECT id_hash, user_id, csrf_token, expires_at, last_seen_at FROM vigil_session
    WHERE id_hash = $1 AND idle_until > clock_timestamp() AND expires_at > clock_timestamp()
), touched AS (
    UPDATE vigil_session v
    SET last_seen_at = clock_timestamp(),
        idle_until = least(v.expires_at, clock_timestamp() + $2::bigint * interval '1 millisecond')
    FROM live WHERE v.id_hash = live.id_hash AND live.last_seen_at < clock_timestamp() - interval '1 minute'
)
SELECT user_id, csrf_token, expires_at FROM live`
	var sess Session
	var userID int64
	err := s.pool.QueryRow(ctx, q, idHash, idle.Milliseconds()).Scan(&userID, &sess.CSRFToken, &sess.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, ErrNotFound
	}
	if err != nil {
		return Session{}, fmt.Errorf("session: %w", err)
	}
	if sess.User, err = s.UserByID(ctx, userID); err != nil {
		return Session{}, err
	}
	return sess, nil
}

// SessionDelete ends a session at once on every replica.
func (s *Store) SessionDelete(ctx context.Context, idHash []byte) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM vigil_session WHERE id_hash = $1`, idHash); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// LoginLimit is how many failed logins are allowed within Window, per account
// and per client address.
type LoginLimit struct {
	PerAccount int
	PerAddress int
	Window     time.Duration
}

// LoginBlocked reports whether account or addr has used up its failed logins
// within the window.
func (s *Store) LoginBlocked(ctx context.Context, account, addr string, l LoginLimit) (bool, error) {
	const q = `
SELECT (SELECT count(*) FROM vigil_login_failure
        WHERE account = $1 AND attempted_at > clock_timestamp() - $3::bigint * interval '1 millisecond') >= $4
    OR (SELECT count(*) FROM vigil_login_failure
        WHERE client_addr = $2 AND attempted_at > clock_timestamp() - $3::bigint * interval '1 millisecond') >= $5`
	var blocked bool
	if err := s.pool.QueryRow(ctx, q, account, addr, l.Window.Milliseconds(), l.PerAccount, l.PerAddress).Scan(&blocked); err != nil {
		return false, fmt.Errorf("login limit: %w", err)
	}
	return blocked, nil
}

// LoginFailureRecord counts a failed login; old failures are pruned on the way.
func (s *Store) LoginFailureRecord(ctx context.Context, account, addr string) error {
	const q = `
WITH pruned AS (DELETE FROM vigil_login_failure WHERE attempted_at < clock_timestamp() - interval '1 day')
INSERT INTO vigil_login_failure (account, client_addr) VALUES ($1, $2)`
	if _, err := s.pool.Exec(ctx, q, account, addr); err != nil {
		return fmt.Errorf("record login failure: %w", err)
	}
	return nil
}

// APIToken is a token as listed; the secret itself is never stored.
type APIToken struct {
	ID         int64
	User       string
	Name       string
	Role       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// APITokenCreate stores a token's hash for a user and returns its id.
func (s *Store) APITokenCreate(ctx context.Context, userID int64, name, role string, hash []byte) (int64, error) {
	var id int64
	const q = `INSERT INTO vigil_api_token (user_id, name, role, token_hash) VALUES ($1, $2, $3, $4) RETURNING id`
	if err := s.pool.QueryRow(ctx, q, userID, name, role, hash).Scan(&id); err != nil {
		return 0, fmt.Errorf("create token: %w", err)
	}
	return id, nil
}

// APITokenUse looks up an unrevoked token by hash, records its use and returns
// its owner with the token's role: never more than the owner's own role.
func (s *Store) APITokenUse(ctx context.Context, hash []byte) (User, error) {
	const q = `
UPDATE vigil_api_token t SET last_used_at = clock_timestamp()
WHERE token_hash = $1 AND revoked_at IS NULL
RETURNING user_id, role`
	var userID int64
	var role string
	err := s.pool.QueryRow(ctx, q, hash).Scan(&userID, &role)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, ErrNotFound
	}
	if err != nil {
		return User{}, fmt.Errorf("token: %w", err)
	}
	u, err := s.UserByID(ctx, userID)
	if err != nil {
		return User{}, err
	}
	u.Role = lowerRole(u.Role, role)
	return u, nil
}

func lowerRole(a, b string) string {
	rank := map[string]int{"admin": 3, "editor": 2, "viewer": 1}
	if rank[b] < rank[a] {
		return b
	}
	return a
}

// APITokens lists tokens, newest first: all of them when userID is 0.
func (s *Store) APITokens(ctx context.Context, userID int64) ([]APIToken, error) {
	const q = `
SELECT t.id, u.name, t.name, t.role, t.created_at, t.last_used_at, t.revoked_at
FROM vigil_api_token t JOIN vigil_user u ON u.id = t.user_id
WHERE $1 = 0 OR t.user_id = $1
ORDER BY t.id DESC`
	rows, err := s.pool.Query(ctx, q, userID)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (APIToken, error) {
		var t APIToken
		err := r.Scan(&t.ID, &t.User, &t.Name, &t.Role, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	return list, nil
}

// APITokenRevoke revokes a token of userID (any user's when userID is 0).
// ErrNotFound when there is no such live token.
func (s *Store) APITokenRevoke(ctx context.Context, id, userID int64) error {
	const q = `
UPDATE vigil_api_token SET revoked_at = clock_timestamp()
WHERE id = $1 AND revoked_at IS NULL AND ($2 = 0 OR user_id = $2)`
	tag, err := s.pool.Exec(ctx, q, id, userID)
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// AuditRecord writes who did what to which subject.
func (s *Store) AuditRecord(ctx context.Context, actor, action, subject, detail string) error {
	const q = `INSERT INTO vigil_audit (actor, action, subject, detail) VALUES ($1, $2, $3, nullif($4, ''))`
	if _, err := s.pool.Exec(ctx, q, actor, action, subject, detail); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// AuditEntry is one recorded change.
type AuditEntry struct {
	ID      int64
	At      time.Time
	Actor   string
	Action  string
	Subject string
	Detail  string
}

// AuditList returns the newest changes first.
func (s *Store) AuditList(ctx context.Context, limit int) ([]AuditEntry, error) {
	const q = `SELECT id, at, actor, action, subject, coalesce(detail, '') FROM vigil_audit ORDER BY id DESC LIMIT $1`
	rows, err := s.pool.Query(ctx, q, limit)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var a AuditEntry
		err := r.Scan(&a.ID, &a.At, &a.Actor, &a.Action, &a.Subject, &a.Detail)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return list, nil
}

// Users lists the accounts by name, with their groups; no password hashes.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	const q = `
SELECT u.id, u.name, u.role, u.created_at,
       coalesce(array_agg(g.name ORDER BY g.name) FILTER (WHERE g.name IS NOT NULL), '{}')
FROM vigil_user u
LEFT JOIN vigil_user_group ug ON ug.user_id = u.id
LEFT JOIN monitoring_group g ON g.id = ug.group_id
GROUP BY u.id ORDER BY u.name`
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (User, error) {
		var u User
		err := r.Scan(&u.ID, &u.Name, &u.Role, &u.CreatedAt, &u.Groups)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	return list, nil
}

// UserDelete removes an account; its sessions and tokens go with it, so it is
// logged out everywhere at once. ErrNotFound.
func (s *Store) UserDelete(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM vigil_user WHERE name = $1`, name)
	if err != nil {
		return fmt.Errorf("delete user: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("user %q: %w", name, ErrNotFound)
	}
	return nil
}

-- Accounts, sessions, API tokens and the admin audit log (issue 8). Sessions, login
-- attempts and tokens live here, not in a replica's memory, so every replica honours a
-- login, a logout or a revoked token at once and shares the login rate limit.

CREATE TABLE vigil_user (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name           text NOT NULL UNIQUE CHECK (name <> ''),
    -- argon2id in PHC string form; never the password.
    password_hash  text NOT NULL,
    -- admin: everything; editor: services and jobs of its groups; viewer: read.
    role           text NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The groups whose services and jobs an editor may change.
CREATE TABLE vigil_user_group (
    user_id   bigint NOT NULL REFERENCES vigil_user (id) ON DELETE CASCADE,
    group_id  bigint NOT NULL REFERENCES monitoring_group (id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, group_id)
);

CREATE TABLE vigil_session (
    -- SHA-256 of the cookie's value: a leaked table does not log anyone in.
    id_hash       bytea PRIMARY KEY,
    user_id       bigint NOT NULL REFERENCES vigil_user (id) ON DELETE CASCADE,
    -- Bound to the session; every form carries it.
    csrf_token    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_seen_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- Idle expiry, pushed forward on use; never past expires_at (absolute expiry).
    idle_until    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL
);
CREATE INDEX vigil_session_user_idx ON vigil_session (user_id);
CREATE INDEX vigil_session_expires_idx ON vigil_session (expires_at);

-- Failed logins, counted per account and per client address over a window.
CREATE TABLE vigil_login_failure (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account       text NOT NULL,
    client_addr   text NOT NULL,
    attempted_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX vigil_login_failure_account_idx ON vigil_login_failure (account, attempted_at);
CREATE INDEX vigil_login_failure_addr_idx ON vigil_login_failure (client_addr, attempted_at);

CREATE TABLE vigil_api_token (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id       bigint NOT NULL REFERENCES vigil_user (id) ON DELETE CASCADE,
    name          text NOT NULL CHECK (name <> ''),
    -- SHA-256 of the token; the token itself is shown once, at creation.
    token_hash    bytea NOT NULL UNIQUE,
    -- Never more than the owner's role: checked when the token is used.
    role          text NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_used_at  timestamptz,
    revoked_at    timestamptz
);

CREATE TABLE vigil_audit (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor    text NOT NULL,
    action   text NOT NULL,
    subject  text NOT NULL,
    detail   text
);
CREATE INDEX vigil_audit_at_idx ON vigil_audit (at DESC);

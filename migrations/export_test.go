package migrations

// UpWithLockWait is Up with a shorter bound on the lock wait, for tests.
var UpWithLockWait = up

DROP TABLE IF EXISTS vigil_audit;
DROP TABLE IF EXISTS vigil_api_token;
DROP TABLE IF EXISTS vigil_login_failure;
DROP TABLE IF EXISTS vigil_session;
DROP TABLE IF EXISTS vigil_user_group;
DROP TABLE IF EXISTS vigil_user;

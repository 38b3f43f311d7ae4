package main

import (
	"fmt"
	"strconv"
)

// accessSettings reads who may read without logging in and how cookies are
// marked: VIGIL_PUBLIC_DASHBOARD=true keeps the read-only pages and GET API
// open (make demo sets it); unset, reading needs a login.
// VIGIL_SECURE_COOKIES=true marks cookies Secure behind a TLS-terminating proxy.
func accessSettings(env []string) (requireLogin, secureCookies bool, err error) {
	vars := envMap(env)
	flag := func(key string) (bool, error) {
		v := vars[key]
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("%w: %s=%q: use true or false", errUsage, key, v)
		}
		return b, nil
	}
	public, err := flag("VIGIL_PUBLIC_DASHBOARD")
	if err != nil {
		return false, false, err
	}
	secure, err := flag("VIGIL_SECURE_COOKIES")
	if err != nil {
		return false, false, err
	}
	return !public, secure, nil
}

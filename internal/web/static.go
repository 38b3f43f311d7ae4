package web

import (
	"mime"
	"net/http"
	"path"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/web/static"
)

// serveStatic serves an embedded file. Its URL carries the content hash: a
// matching hash may be cached for a year; an old hash (a page rendered by an
// older replica during a rolling upgrade) still gets the current file, but
// uncached.
func serveStatic(c echo.Context) error {
	a, ok := static.Lookup(c.Param("name"))
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "no such file")
	}
	h := c.Response().Header()
	if c.Param("hash") == a.Hash {
		h.Set(echo.HeaderCacheControl, "public, max-age=31536000, immutable")
	} else {
		h.Set(echo.HeaderCacheControl, "no-cache")
	}
	h.Set("ETag", `"`+a.Hash+`"`)
	if c.Request().Header.Get("If-None-Match") == `"`+a.Hash+`"` {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, mime.TypeByExtension(path.Ext(a.Name)), a.Body)
}

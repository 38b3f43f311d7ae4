package web

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// queryContext is an echo context for GET path?rawQuery, built without
// parsing a request line, so that any bytes can reach the parsers.
func queryContext(path, rawQuery string) echo.Context {
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path, RawQuery: rawQuery}, Header: http.Header{}}
	return echo.New().NewContext(req, httptest.NewRecorder())
}

// isBadRequest tells a 400 with a message apart from any other error.
func isBadRequest(err error) bool {
	var he *echo.HTTPError
	return errors.As(err, &he) && he.Code == http.StatusBadRequest && he.Message != ""
}

// FuzzListParams feeds the list pages' and the JSON API's query parameters
// (/jobs and /api/v1/jobs: state, limit, cursor; /alerts; the service page's
// range and limit) arbitrary query strings. A parser either rejects a value
// with a 400 that says what it accepts or returns a value the store accepts;
// it never panics, and the "next page" link it builds stays on the same path
// and carries the cursor it was given.
func FuzzListParams(f *testing.F) {
	f.Add("state=failed&service=shop&limit=50&cursor=123")
	f.Add("state=%20Ready%20&limit=1")
	f.Add("limit=0&cursor=-1")
	f.Add("limit=9223372036854775808&cursor=9223372036854775807")
	f.Add("limit=1e3&cursor=0x10&state=DONE%00")
	f.Add("range=7d&limit=200")
	f.Add("range=24H&range=1h")
	f.Add("state=%ZZ&limit=%")
	f.Add("fragment=1&cursor=5;limit=5")
	f.Add("limit=+5&cursor=%2B7")
	f.Fuzz(func(t *testing.T, rawQuery string) {
		c := queryContext("/api/v1/jobs", rawQuery)

		limit, err := limitParam(c)
		switch {
		case err != nil && !isBadRequest(err):
			t.Fatalf("limit: %v is not a 400", err)
		case err == nil && c.QueryParam("limit") == "" && limit != 0:
			t.Fatalf("limit: no value gave %d", limit)
		case err == nil && c.QueryParam("limit") != "" && (limit < 1 || limit > monitoring.MaxPageSize):
			t.Fatalf("limit: accepted %d from %q", limit, c.QueryParam("limit"))
		}

		cursor, err := cursorParam(c)
		switch {
		case err != nil && !isBadRequest(err):
			t.Fatalf("cursor: %v is not a 400", err)
		case err == nil && c.QueryParam("cursor") == "" && cursor != 0:
			t.Fatalf("cursor: no value gave %d", cursor)
		case err == nil && c.QueryParam("cursor") != "" && cursor <= 0:
			t.Fatalf("cursor: accepted %d from %q", cursor, c.QueryParam("cursor"))
		}

		state, err := stateParam(c)
		switch {
		case err != nil && !isBadRequest(err):
			t.Fatalf("state: %v is not a 400", err)
		case err == nil && state != "" && !slices.Contains(monitoring.JobStates, state):
			t.Fatalf("state: accepted %q", state)
		}

		name, d, err := rangeParam(c)
		switch {
		case err != nil && !isBadRequest(err):
			t.Fatalf("range: %v is not a 400", err)
		case err == nil && (rangeDurations[name] != d || d <= 0):
			t.Fatalf("range: accepted %q as %s", name, d)
		}

		// The next page's link: same path, the new cursor, no fragment flag.
		next := int64(1) + int64(len(rawQuery))
		href := pageHref(c, map[string]string{"cursor": strconv.FormatInt(next, 10)})
		u, err := url.Parse(href)
		switch {
		case err != nil:
			t.Fatalf("next link %q does not parse: %v", href, err)
		case u.Scheme != "" || u.Host != "" || u.Path != "/api/v1/jobs":
			t.Fatalf("next link %q leaves the page", href)
		case u.Query().Get("cursor") != strconv.FormatInt(next, 10) || len(u.Query()["cursor"]) != 1:
			t.Fatalf("next link %q does not carry cursor %d", href, next)
		case u.Query().Has("fragment"):
			t.Fatalf("next link %q keeps the fragment flag", href)
		}
	})
}

// FuzzNameParam feeds the service page's :name path parameter arbitrary
// (possibly escaped) values: the name is unescaped exactly once, and a bad
// escape is a 400.
func FuzzNameParam(f *testing.F) {
	f.Add("shop", false)
	f.Add("a%2Fb", true)
	f.Add("100%", true)
	f.Add("%zz", true)
	f.Add("%25252F", true)
	f.Fuzz(func(t *testing.T, raw string, escaped bool) {
		c := queryContext("/services/x", "")
		if escaped {
			c.Request().URL.RawPath = "/services/" + raw
		}
		c.SetParamNames("name")
		c.SetParamValues(raw)
		name, err := nameParam(c)
		want, werr := raw, error(nil)
		if escaped {
			want, werr = url.PathUnescape(raw)
		}
		switch {
		case werr != nil && !isBadRequest(err):
			t.Fatalf("%q: bad escape gave %q, %v; want a 400", raw, name, err)
		case werr == nil && (err != nil || name != want):
			t.Fatalf("%q: got %q, %v; want %q", raw, name, err, want)
		}
	})
}

// FuzzLocalPath feeds the login page's ?next= (and the form's next field)
// arbitrary values. Whatever it keeps must stay on this site as a browser
// reads it: browsers drop tabs and newlines from a URL and read a backslash
// as a slash, so "/\t/evil.example" is "//evil.example", another host.
func FuzzLocalPath(f *testing.F) {
	f.Add("/services/shop?range=7d")
	f.Add("//evil.example/")
	f.Add("/\\evil.example")
	f.Add("https://evil.example/")
	f.Add("/\t/evil.example")
	f.Add("/\n/evil.example")
	f.Add("/%2F/evil.example")
	f.Add("")
	f.Fuzz(func(t *testing.T, next string) {
		got := localPath(next)
		if got != "/" && got != next {
			t.Fatalf("localPath(%q) = %q: neither the input nor /", next, got)
		}
		asRead := strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(got)
		u, err := url.Parse(asRead)
		switch {
		case !strings.HasPrefix(asRead, "/") || strings.HasPrefix(asRead, "//"):
			t.Fatalf("localPath(%q) = %q, which a browser reads as %q: not a path on this site", next, got, asRead)
		case err == nil && (u.Scheme != "" || u.Host != ""):
			t.Fatalf("localPath(%q) = %q leads to %q", next, got, u.Host)
		}
	})
}

// FuzzAdminChoices feeds the admin's small choice parameters arbitrary
// values: ?history= is keep, delete or a 400; a notice is one of the known
// texts (with the subject quoted) or nothing.
func FuzzAdminChoices(f *testing.F) {
	f.Add("keep", "created", "shop")
	f.Add("", "requeued", "42")
	f.Add("DELETE", "nope", "<script>")
	f.Fuzz(func(t *testing.T, history, kind, subject string) {
		keep, err := historyChoice(history)
		switch {
		case history == "" || history == "keep":
			if err != nil || !keep {
				t.Fatalf("history %q: keep=%t err=%v", history, keep, err)
			}
		case history == "delete":
			if err != nil || keep {
				t.Fatalf("history %q: keep=%t err=%v", history, keep, err)
			}
		case !isBadRequest(err):
			t.Fatalf("history %q: %v, want a 400", history, err)
		}
		text := noticeText(kind, subject)
		if text != "" && kind != "requeued" && !strings.Contains(text, strconv.Quote(subject)) {
			t.Fatalf("notice %q for %q does not quote the subject: %q", kind, subject, text)
		}
	})
}

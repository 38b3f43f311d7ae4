// Package templates holds the dashboard's templ components. The generated
// *_templ.go files are committed; regenerate with `go tool templ generate`.
//
// Every time is rendered as <time datetime="RFC 3339">UTC text</time>; the
// page's script rewrites the text into the viewer's time zone and keeps the
// absolute value in the title. Without JavaScript the UTC text stays.
package templates

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// Page is what the layout needs to know about the page it wraps.
type Page struct {
	Title    string
	Section  string // overview, jobs, instances, alerts: the nav entry to mark current
	Instance string // the replica serving the page
	// Refresh is the polling period in seconds for the page's script; 0 turns
	// refreshing off.
	Refresh int
	// User is who is logged in ("" for nobody); CSRF is their session's form
	// token, for the logout button.
	User string
	CSRF string
	// CanManage shows the link to the management pages.
	CanManage bool
	// Form pages are never refreshed in place: that would wipe what is typed.
	Form bool
}

const timeLayout = "2006-01-02 15:04:05 UTC"

func timeText(t time.Time) string { return t.UTC().Format(timeLayout) }

func isoTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// latency formats milliseconds for people: "0.4 ms", "12 ms", "1.25 s".
func latency(ms float64) string {
	switch {
	case ms < 1:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	case ms < 1000:
		return strconv.FormatFloat(math.Round(ms), 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
}

func optLatency(ms *float64) string {
	if ms == nil {
		return "—"
	}
	return latency(*ms)
}

// percent shows an uptime with enough digits to tell 99.9% from 99.99%;
// "—" when the window holds no result.
func percent(r monitoring.Ratio) string {
	p, ok := r.Percent()
	switch {
	case !ok:
		return "—"
	case r.Up == r.Total:
		return "100%"
	case p >= 99:
		// Never round a failure up to 100%.
		return strconv.FormatFloat(math.Floor(p*100)/100, 'f', 2, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + "%"
}

func ratioTitle(r monitoring.Ratio) string {
	if r.Total == 0 {
		return "no results in this window"
	}
	return fmt.Sprintf("%d of %d checks UP", r.Up, r.Total)
}

// duration formats a span coarsely: "45s", "3m 20s", "2h 5m", "3d 4h".
func duration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh %dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd %dh", s/86400, s%86400/3600)
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

func itoa[T ~int | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }

func optInt(n *int) string {
	if n == nil {
		return "—"
	}
	return strconv.Itoa(*n)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// ServiceHref is the service page's URL; names are user data, so they are
// path-escaped (a name may hold "/", "?" or "#").
func ServiceHref(name string) string { return "/services/" + url.PathEscape(name) }

func serviceURL(name string) templ.SafeURL { return templ.URL(ServiceHref(name)) }

// RedactURL hides a password in a target URL: the dashboard is readable by
// anyone who can reach it.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}

// statusIcon gives each status a shape as well as a colour.
func statusIcon(status string) string {
	switch status {
	case "UP":
		return "▲"
	case "DOWN":
		return "▼"
	case "PAUSED":
		return "Ⅱ"
	case "FAILED":
		return "✖"
	case "RUNNING":
		return "▶"
	case "READY":
		return "○"
	case "DONE", "DELIVERED":
		return "✔"
	case "SENDING":
		return "▶"
	case "PENDING":
		return "…"
	}
	return "…"
}

func statusClass(status string) string { return "st-" + strings.ToLower(status) }

// resultTitle is a strip mark's hover text. It starts with the slot time in
// timeLayout, which the script rewrites into the viewer's time zone.
func resultTitle(r monitoring.Result) string {
	var b strings.Builder
	b.Grow(48 + len(r.Error))
	b.WriteString(slotText(r.Slot))
	b.WriteString(" · ")
	b.WriteString(r.Status)
	if r.Degraded {
		b.WriteString(" (slow)")
	}
	b.WriteString(" · ")
	b.WriteString(latency(r.LatencyMS))
	if r.Status != "UP" && r.HTTPStatus != nil {
		b.WriteString(" · HTTP ")
		b.WriteString(strconv.Itoa(*r.HTTPStatus))
	}
	if r.Error != "" {
		b.WriteString(" · ")
		b.WriteString(r.Error)
	}
	return b.String()
}

// slotText formats a slot start. Services with one interval share their
// slots, so the overview formats the same few dozen instants thousands of
// times; a small cache saves most of that.
func slotText(slot int64) string {
	slotCache.Lock()
	defer slotCache.Unlock()
	if s, ok := slotCache.m[slot]; ok {
		return s
	}
	if len(slotCache.m) >= 4096 {
		clear(slotCache.m)
	}
	s := timeText(monitoring.SlotTime(slot))
	slotCache.m[slot] = s
	return s
}

var slotCache = struct {
	sync.Mutex
	m map[int64]string
}{m: map[int64]string{}}

func stripLabel(results []monitoring.Result) string {
	down := 0
	for _, r := range results {
		if r.Status == "DOWN" {
			down++
		}
	}
	if len(results) == 0 {
		return "No results yet"
	}
	return fmt.Sprintf("Last %d results: %d UP, %d DOWN", len(results), len(results)-down, down)
}

func groupName(g string) string {
	if g == "" {
		return "Ungrouped"
	}
	return g
}

// serviceGroup is a run of services with one group, in overview order.
type serviceGroup struct {
	Name     string
	Services []monitoring.ServiceSummary
}

func groupServices(services []monitoring.ServiceSummary) []serviceGroup {
	var groups []serviceGroup
	for _, s := range services {
		if len(groups) == 0 || groups[len(groups)-1].Name != s.Group {
			groups = append(groups, serviceGroup{Name: s.Group})
		}
		g := &groups[len(groups)-1]
		g.Services = append(g.Services, s)
	}
	return groups
}

func queryEscape(s string) string { return url.QueryEscape(s) }

func secondsDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

package web

import (
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzServiceInput feeds the service form/API validation arbitrary input: it
// must never panic, and whatever it accepts must fit the database's checks
// and the scheduler's rules, so a bad value is a message, never a 500.
func FuzzServiceInput(f *testing.F) {
	f.Add("shop", "core", "http://127.0.0.1:8081/ok", "30s", "5s")
	f.Add(" padded", "", "ftp://x", "1500ms", "soon")
	f.Add("..", "nope", "http://169.254.169.254/", "0s", "-1s")
	f.Add("a\x00b", "core", "localhost:8080/health", "1h", "29s")
	f.Add(strings.Repeat("x", 201), "core", "https://[fd00:ec2::254]/", "", "")
	f.Fuzz(func(t *testing.T, name, group, rawURL, interval, timeout string) {
		in := serviceInput{Name: name, Group: group, URL: rawURL, Interval: interval, Timeout: timeout}
		spec, problems := checkServiceInput(in, []string{"core"}, 30*time.Second, false)
		for field, msg := range problems {
			if msg == "" {
				t.Fatalf("field %q: empty message", field)
			}
		}
		if problems != nil {
			return
		}
		u, err := url.Parse(spec.URL)
		switch {
		case spec.Name == "" || !utf8.ValidString(spec.Name) || strings.TrimSpace(spec.Name) != spec.Name:
			t.Fatalf("accepted name %q", spec.Name)
		case spec.Group != "" && spec.Group != "core":
			t.Fatalf("accepted undefined group %q", spec.Group)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "":
			t.Fatalf("accepted url %q", spec.URL)
		case spec.Interval < time.Second || spec.Interval%time.Second != 0:
			t.Fatalf("accepted interval %s", spec.Interval)
		case spec.Timeout <= 0 || spec.Timeout >= 30*time.Second:
			t.Fatalf("accepted timeout %s", spec.Timeout)
		case strings.HasPrefix(u.Hostname(), "169.254.") || u.Hostname() == "fd00:ec2::254":
			t.Fatalf("accepted a metadata address %q", spec.URL)
		}
	})
}

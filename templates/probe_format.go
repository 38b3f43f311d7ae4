package templates

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// The service page shows how a service is probed, but never a header value, a body or a
// credential: even as ${NAME} templates they may have been written in clear by mistake.

func headerNames(p monitoring.ProbeSpec) string {
	names := make([]string, 0, len(p.Headers))
	for name := range p.Headers {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func authKind(p monitoring.ProbeSpec) string {
	switch {
	case p.BearerToken != "":
		return "bearer token"
	case p.BasicUser != "" || p.BasicPassword != "":
		return "basic"
	}
	return ""
}

func probeMethod(p monitoring.ProbeSpec) string {
	if p.Method == "" {
		return "GET"
	}
	return p.Method
}

func expectedStatus(p monitoring.ProbeSpec) string {
	if len(p.ExpectedStatus) == 0 {
		return "any 2xx"
	}
	codes := make([]string, len(p.ExpectedStatus))
	for i, c := range p.ExpectedStatus {
		codes[i] = strconv.Itoa(c)
	}
	return strings.Join(codes, ", ")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func degradedAbove(p monitoring.ProbeSpec) string {
	if p.DegradedAboveMS <= 0 {
		return "never"
	}
	return (time.Duration(p.DegradedAboveMS) * time.Millisecond).String()
}

// failedObserved is the part of a condition failure after the condition: "failed: observed 503".
func failedObserved(r monitoring.Result) string {
	if rest, ok := strings.CutPrefix(r.Error, "condition "+r.FailedCondition+" "); ok {
		return rest
	}
	return r.Error
}

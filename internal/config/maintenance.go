package config

import (
	"fmt"
	"time"
	_ "time/tzdata" // time zones of recurring windows resolve on hosts without a zoneinfo database

	"github.com/vigilhq/vigil/internal/cron"
)

// maxWindowDuration bounds a recurring window; longer spans are one-off windows.
const maxWindowDuration = 7 * 24 * time.Hour

// MaintenanceWindow is a span during which the services it names (directly or through their
// group) are probed and their results recorded as usual, but no alerts are sent. A window
// is one-off (Start and End) or recurring (Cron and Duration, in Timezone).
//
// A result belongs to a window when its slot starts inside it. A transition that a window
// held back is announced after the window if it still holds then.
type MaintenanceWindow struct {
	Name     string
	Services []string // service names
	Groups   []string // group names
	Start    time.Time
	End      time.Time     // exclusive
	Cron     string        // five-field cron expression: when each occurrence starts
	Duration time.Duration // how long each occurrence lasts, at most a week
	Timezone string        // IANA zone the cron expression is read in; default UTC
}

// Recurring reports whether the window repeats on a cron schedule.
func (w MaintenanceWindow) Recurring() bool { return w.Cron != "" }

var maintenanceFields = []string{"name", "services", "groups", "start", "end", "cron", "duration", "timezone"}

// maintenanceWindows reads the maintenance_windows section.
func (d *decoder) maintenanceWindows(root *mappingFields, cfg *Config) {
	items := d.list(root, "maintenance_windows", `write each window as an item starting with "- name: nightly deploys"`)
	for i, item := range items {
		path := fmt.Sprintf("maintenance_windows[%d]", i)
		cfg.MaintenanceWindows = append(cfg.MaintenanceWindows, MaintenanceWindow{})
		w := &cfg.MaintenanceWindows[i]
		f := d.item(item, path, maintenanceFields,
			`write each window as "- name: nightly deploys" followed by services: or groups:, and start: and end: or cron: and duration:`)
		if f == nil {
			continue
		}
		d.text(f, scope{path: path, owner: path}, "name", &w.Name)
		sc := itemScope("maintenance window", path, w.Name)
		d.report(sc, item, f, maintenanceFields)
		if v, ok := d.textList(f, sc, "services", "services: [inventory, billing]"); ok {
			w.Services = v
		}
		if v, ok := d.textList(f, sc, "groups", "groups: [core]"); ok {
			w.Groups = v
		}
		d.timestamp(f, sc, "start", &w.Start)
		d.timestamp(f, sc, "end", &w.End)
		d.text(f, sc, "cron", &w.Cron)
		d.duration(f, sc, "duration", &w.Duration)
		d.text(f, sc, "timezone", &w.Timezone)
		if w.Cron != "" && w.Timezone == "" {
			if _, set := f.values["timezone"]; !set {
				w.Timezone = "UTC"
			}
		}
	}
}

func (d *decoder) timestamp(f *mappingFields, sc scope, key string, dst *time.Time) {
	n, ok := d.value(f, sc, key, key+": 2026-05-01T02:00:00Z")
	if !ok {
		return
	}
	t, err := time.Parse(time.RFC3339, n.Value)
	if err != nil {
		d.fail(sc, key, n, fmt.Sprintf("%s %s is not an RFC 3339 time", key, quote(n.Value)),
			"write the date, time and zone, e.g. 2026-05-01T02:00:00Z or 2026-05-01T04:00:00+02:00")
		return
	}
	*dst = t
}

func (v *validator) maintenanceWindows(windows []MaintenanceWindow, services []Service, groupNames []string) {
	serviceNames := make([]string, 0, len(services))
	for _, s := range services {
		serviceNames = append(serviceNames, s.Name)
	}
	first := map[string]string{}
	for i, w := range windows {
		path := fmt.Sprintf("maintenance_windows[%d]", i)
		sc := itemScope("maintenance window", path, w.Name)
		if v.name(sc, "maintenance window", w.Name) {
			if prev, dup := first[w.Name]; dup {
				v.report(scope{path: path, owner: path}, "name", "duplicate maintenance window name "+quote(w.Name),
					v.at(prev)+" already uses it; give each window a unique name")
			} else {
				first[w.Name] = path
			}
		}

		if len(w.Services) == 0 && len(w.Groups) == 0 {
			v.report(sc, "", "the window names no services or groups",
				"add services: [inventory] or groups: [core] to say whose alerts it holds back")
		}
		v.references(sc, "services", "service", w.Services, serviceNames, "under services:")
		v.references(sc, "groups", "group", w.Groups, groupNames, "under groups:")

		oneOff := !w.Start.IsZero() || !w.End.IsZero()
		recurring := w.Cron != "" || w.Duration != 0
		switch {
		case oneOff && recurring:
			v.report(sc, "cron", "the window has both start/end and cron/duration",
				"a window is either one-off (start: and end:) or recurring (cron: and duration:): keep one pair")
		case !oneOff && !recurring:
			v.report(sc, "", "the window has no time",
				`set start: and end: (e.g. 2026-05-01T02:00:00Z) for one span, or cron: and duration: (e.g. cron: "0 2 * * sun", duration: 2h) for a recurring one`)
		case oneOff:
			v.oneOffWindow(sc, w)
		default:
			v.recurringWindow(sc, w)
		}
	}
}

func (v *validator) oneOffWindow(sc scope, w MaintenanceWindow) {
	switch {
	case w.Start.IsZero():
		v.report(sc, "start", "start is missing", "add start: with the time the window opens, e.g. 2026-05-01T02:00:00Z")
	case w.End.IsZero():
		v.report(sc, "end", "end is missing", "add end: with the time the window closes, e.g. 2026-05-01T04:00:00Z")
	case !w.End.After(w.Start):
		v.report(sc, "end", fmt.Sprintf("end %s is not after start %s", w.End.Format(time.RFC3339), w.Start.Format(time.RFC3339)),
			"set end: to a later time than start:")
	}
	if w.Timezone != "" {
		v.report(sc, "timezone", "timezone applies to cron windows only",
			"delete timezone: and write start: and end: with their zone offset, e.g. 2026-05-01T04:00:00+02:00")
	}
}

func (v *validator) recurringWindow(sc scope, w MaintenanceWindow) {
	if w.Cron == "" {
		v.report(sc, "cron", "cron is missing", `add cron: with when each window opens, e.g. cron: "0 2 * * sun" for Sundays at 02:00`)
	} else if _, err := cron.Parse(w.Cron); err != nil {
		v.report(sc, "cron", "cron "+quote(w.Cron)+" is not a cron expression: "+err.Error(),
			`write minute hour day-of-month month day-of-week, e.g. "0 2 * * sun" or "30 1 * * mon-fri"`)
	}
	switch {
	case w.Duration <= 0:
		v.report(sc, "duration", "duration "+formatDuration(w.Duration)+" is not more than 0",
			"set duration: to how long each window lasts, e.g. 2h")
	case w.Duration > maxWindowDuration:
		v.report(sc, "duration", "duration "+formatDuration(w.Duration)+" is longer than a week (168h)",
			"shorten it, or use a one-off window with start: and end: for a longer span")
	}
	if w.Timezone == "" {
		v.report(sc, "timezone", "timezone is empty", "write an IANA zone such as Europe/Berlin, or delete the line for UTC")
	} else if _, err := time.LoadLocation(w.Timezone); err != nil {
		v.report(sc, "timezone", "timezone "+quote(w.Timezone)+" is not a known time zone",
			"write an IANA zone such as UTC, Europe/Berlin or America/New_York")
	}
}

// references checks that every name in names is defined.
func (v *validator) references(sc scope, key, kind string, names, defined []string, where string) {
	known := make(map[string]bool, len(defined))
	for _, n := range defined {
		known[n] = true
	}
	for _, n := range names {
		if known[n] {
			continue
		}
		fix := fmt.Sprintf("no %ss are defined: add one %s, or remove %s", kind, where, quote(n))
		if len(defined) > 0 {
			fix = fmt.Sprintf("use a defined %s (%s)", kind, listNames(defined))
			if s := suggest(n, defined); s != "" {
				fix = fmt.Sprintf("did you mean %q? ", s) + fix
			}
		}
		v.report(sc, key, kind+" "+quote(n)+" is not defined", fix)
	}
}

// Package cron reads the five-field schedules of crontab(5) ("0 2 * * sun": minute, hour,
// day of month, month, day of week) and finds the times they match. Vigil uses it for
// recurring maintenance windows: a window opens at each match and stays open for a duration.
//
// Fields take *, numbers, ranges (1-5), steps (*/15, 0-30/10), lists (1,15) and the names
// jan..dec and sun..sat; 7 is Sunday too. As in cron, when both day fields are restricted a
// day matches either of them. The macros @hourly, @daily (@midnight), @weekly, @monthly and
// @yearly (@annually) are accepted. Times are matched in the location of the time passed in.
package cron

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed expression. The zero Schedule matches nothing.
type Schedule struct {
	text                          string
	minute, hour, dom, month, dow uint64 // bit i set: value i matches
	domRestricted, dowRestricted  bool
}

type field struct {
	name     string
	min, max int
	names    []string // names[i] stands for min+i
}

var (
	minuteField = field{name: "minute", min: 0, max: 59}
	hourField   = field{name: "hour", min: 0, max: 23}
	domField    = field{name: "day of month", min: 1, max: 31}
	monthField  = field{name: "month", min: 1, max: 12,
		names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}}
	// 7 is Sunday as well; it is folded onto 0 after parsing.
	dowField = field{name: "day of week", min: 0, max: 7,
		names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}}
)

var macros = map[string]string{
	"@hourly":   "0 * * * *",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@weekly":   "0 0 * * 0",
	"@monthly":  "0 0 1 * *",
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
}

// Parse reads an expression. Errors name the field and the value that is wrong.
func Parse(expr string) (Schedule, error) {
	text := strings.TrimSpace(expr)
	spec := text
	if strings.HasPrefix(spec, "@") {
		m, ok := macros[strings.ToLower(spec)]
		if !ok {
			return Schedule{}, fmt.Errorf("unknown macro %q (known: @hourly, @daily, @weekly, @monthly, @yearly)", spec)
		}
		spec = m
	}
	parts := strings.Fields(spec)
	if len(parts) != 5 {
		return Schedule{}, fmt.Errorf("%q has %d fields, not 5 (minute hour day-of-month month day-of-week, e.g. \"0 2 * * sun\")", text, len(parts))
	}
	s := Schedule{text: text}
	var err error
	if s.minute, err = minuteField.parse(parts[0]); err != nil {
		return Schedule{}, err
	}
	if s.hour, err = hourField.parse(parts[1]); err != nil {
		return Schedule{}, err
	}
	if s.dom, err = domField.parse(parts[2]); err != nil {
		return Schedule{}, err
	}
	if s.month, err = monthField.parse(parts[3]); err != nil {
		return Schedule{}, err
	}
	if s.dow, err = dowField.parse(parts[4]); err != nil {
		return Schedule{}, err
	}
	if s.dow&(1<<7) != 0 {
		s.dow = s.dow&^(1<<7) | 1
	}
	s.domRestricted = !strings.HasPrefix(parts[2], "*")
	s.dowRestricted = !strings.HasPrefix(parts[4], "*")
	return s, nil
}

// String returns the expression as written.
func (s Schedule) String() string { return s.text }

func (f field) parse(text string) (uint64, error) {
	var set uint64
	for item := range strings.SplitSeq(text, ",") {
		rangeText, stepText, hasStep := strings.Cut(item, "/")
		lo, hi := f.min, f.max
		switch {
		case rangeText == "*":
		case strings.Contains(rangeText, "-"):
			a, b, _ := strings.Cut(rangeText, "-")
			var err error
			if lo, err = f.value(a); err != nil {
				return 0, err
			}
			if hi, err = f.value(b); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("%s range %q runs backwards; write it low-high", f.name, rangeText)
			}
		default:
			v, err := f.value(rangeText)
			if err != nil {
				return 0, err
			}
			lo = v
			if !hasStep {
				hi = v // "5/15" means 5, 20, 35, 50, as in cron
			}
		}
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("%s step %q is not a positive whole number", f.name, stepText)
			}
			step = n
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

func (f field) value(text string) (int, error) {
	for i, name := range f.names {
		if strings.EqualFold(text, name) {
			return f.min + i, nil
		}
	}
	v, err := strconv.Atoi(text)
	if err != nil {
		if len(f.names) > 0 {
			return 0, fmt.Errorf("%s %q is not a number or a name (%s..%s)", f.name, text, f.names[0], f.names[len(f.names)-1])
		}
		return 0, fmt.Errorf("%s %q is not a number", f.name, text)
	}
	if v < f.min || v > f.max {
		return 0, fmt.Errorf("%s %d is outside %d-%d", f.name, v, f.min, f.max)
	}
	return v, nil
}

// Matches reports whether the minute that t falls in matches, in t's location.
func (s Schedule) Matches(t time.Time) bool {
	return s.dayMatches(t) && has(s.hour, t.Hour()) && has(s.minute, t.Minute())
}

func (s Schedule) dayMatches(t time.Time) bool {
	if !has(s.month, int(t.Month())) {
		return false
	}
	dom, dow := has(s.dom, t.Day()), has(s.dow, int(t.Weekday()))
	if s.domRestricted && s.dowRestricted {
		return dom || dow
	}
	return dom && dow
}

func has(set uint64, v int) bool { return set&(1<<v) != 0 }

// Prev returns the latest matching minute start in (after, t], in t's location. It skips
// whole days and hours that cannot match, so a long span costs little.
func (s Schedule) Prev(t, after time.Time) (time.Time, bool) {
	if s.month == 0 {
		return time.Time{}, false
	}
	loc := t.Location()
	cur := t.Truncate(time.Minute)
	for cur.After(after) {
		lt := cur.In(loc)
		y, m, d := lt.Date()
		switch {
		case !s.dayMatches(lt):
			cur = earlier(cur, time.Date(y, m, d, 0, 0, 0, 0, loc).Add(-time.Minute))
		case !has(s.hour, lt.Hour()):
			cur = earlier(cur, time.Date(y, m, d, lt.Hour(), 0, 0, 0, loc).Add(-time.Minute))
		case !has(s.minute, lt.Minute()):
			cur = cur.Add(-time.Minute)
		default:
			return cur, true
		}
	}
	return time.Time{}, false
}

// Next returns the earliest matching minute start in [t, before), in t's location.
func (s Schedule) Next(t, before time.Time) (time.Time, bool) {
	if s.month == 0 {
		return time.Time{}, false
	}
	loc := t.Location()
	cur := t.Truncate(time.Minute)
	if cur.Before(t) {
		cur = cur.Add(time.Minute)
	}
	for cur.Before(before) {
		lt := cur.In(loc)
		y, m, d := lt.Date()
		switch {
		case !s.dayMatches(lt):
			cur = later(cur, time.Date(y, m, d+1, 0, 0, 0, 0, loc))
		case !has(s.hour, lt.Hour()):
			cur = later(cur, time.Date(y, m, d, lt.Hour()+1, 0, 0, 0, loc))
		case !has(s.minute, lt.Minute()):
			cur = cur.Add(time.Minute)
		default:
			return cur, true
		}
	}
	return time.Time{}, false
}

// earlier and later guard the jumps: around a daylight-saving change time.Date may pick the
// other side of the gap, and a jump that goes the wrong way becomes a one-minute step.
func earlier(cur, target time.Time) time.Time {
	if target.Before(cur) {
		return target
	}
	return cur.Add(-time.Minute)
}

func later(cur, target time.Time) time.Time {
	if target.After(cur) {
		return target
	}
	return cur.Add(time.Minute)
}

// Window is a recurring span: it opens at each match of a schedule, in a location, and
// stays open for a duration.
type Window struct {
	Schedule Schedule
	Duration time.Duration
	Location *time.Location
}

// OpenAt returns the start of the window occurrence that contains t, if one does.
func (w Window) OpenAt(t time.Time) (time.Time, bool) {
	if w.Duration <= 0 {
		return time.Time{}, false
	}
	return w.Schedule.Prev(t.In(w.location()), t.Add(-w.Duration))
}

// NextOpen returns the next start at or after t within the coming year.
func (w Window) NextOpen(t time.Time) (time.Time, bool) {
	return w.Schedule.Next(t.In(w.location()), t.AddDate(1, 0, 1))
}

func (w Window) location() *time.Location {
	if w.Location == nil {
		return time.UTC
	}
	return w.Location
}

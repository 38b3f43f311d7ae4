package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// ValidationError lists everything wrong with a services file. Parse and Validate return it
// (as error) whenever they reject a configuration.
type ValidationError struct {
	Problems []Problem
	File     string // set by Load; prefixes every line of Error()
}

// Problem is one thing wrong with the configuration.
type Problem struct {
	Field   string // path of the offending field, e.g. "services[2].timeout"; "" for the file as a whole
	Service string // name of the service the problem is inside, else ""
	Line    int    // 1-based line in the file; 0 when unknown (a Config built in code)
	Message string // what is wrong, where, and how to fix it
}

// Error returns one line per problem, in file order.
func (e *ValidationError) Error() string {
	if len(e.Problems) == 0 {
		return "invalid configuration"
	}
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if e.File != "" {
			b.WriteString(e.File)
			b.WriteString(": ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// newValidationError returns nil when there is nothing to report, so callers can return
// its result as an error only after checking for nil (a nil *ValidationError in an error
// interface is not a nil error).
func newValidationError(problems []Problem) *ValidationError {
	if len(problems) == 0 {
		return nil
	}
	// File order reads like a compiler's output; problems without a line go last.
	slices.SortStableFunc(problems, func(a, b Problem) int {
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Line, b.Line)
	})
	return &ValidationError{Problems: problems}
}

// scope is the item a problem is reported in: a section (scheduler, alerts) or one service,
// group or webhook.
type scope struct {
	path    string // field path of the item, e.g. "services[2]"; "" for the top of the file
	owner   string // how messages name the item, e.g. `service "inventory"`; "" for sections
	service string // Problem.Service
}

func (s scope) field(key string) string {
	switch {
	case s.path == "":
		return key
	case key == "":
		return s.path
	}
	return s.path + "." + key
}

// itemScope names an item by its name when it has one and by its position when not.
func itemScope(kind, path, name string) scope {
	sc := scope{path: path, owner: path}
	if name != "" {
		sc.owner = fmt.Sprintf("%s %s", kind, quote(name))
	}
	if kind == "service" {
		sc.service = name
	}
	return sc
}

// newProblem builds "<what> in <owner> (line N); <fix>".
func newProblem(sc scope, key string, line int, what, fix string) Problem {
	var b strings.Builder
	b.WriteString(what)
	if sc.owner != "" {
		b.WriteString(" in ")
		b.WriteString(sc.owner)
	}
	if line > 0 {
		fmt.Fprintf(&b, " (line %d)", line)
	}
	b.WriteString("; ")
	b.WriteString(fix)
	return Problem{Field: sc.field(key), Service: sc.service, Line: line, Message: b.String()}
}

// quote shows a value from the file in a message: quoted so spaces and control characters
// are visible, and cut short so one bad line cannot flood the output.
func quote(s string) string {
	const limit = 80
	if utf8.RuneCountInString(s) <= limit {
		return fmt.Sprintf("%q", s)
	}
	runes := []rune(s)
	return fmt.Sprintf("%q...", string(runes[:limit]))
}

// listNames joins names for a message, cut short after a few.
func listNames(names []string) string {
	const limit = 10
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}

// suggest returns the candidate the user most likely meant by got, or "" when none is close:
// the same word in another case or spelling (maxAttempts, max-attempts) or one within two
// edits (tiemout).
func suggest(got string, candidates []string) string {
	squash := func(s string) string {
		return strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(s))
	}
	best, bestDistance := "", 3
	for _, c := range candidates {
		if squash(c) == squash(got) {
			return c
		}
		if d := editDistance(strings.ToLower(got), strings.ToLower(c)); d < bestDistance {
			best, bestDistance = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, counted in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return max(len(ra), len(rb)) // long keys are never typos of ours; skip the quadratic work
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Package conditions is the small typed language a service uses to say what a healthy
// answer looks like, in the style of Gatus:
//
//	[STATUS] == 200
//	[STATUS] < 300
//	[RESPONSE_TIME] < 500            (milliseconds; 500ms also works)
//	[BODY] == pat(*UP*)
//	[BODY].status == UP
//	[BODY].checks[0].ok == true
//	[CERTIFICATE_EXPIRATION] > 72h
//	[CONNECTED] == true
//
// Conditions are parsed once, when the config is loaded, so a typo is a config error and not
// a service that is DOWN forever. Evaluate is a pure function of a probe's Observation.
package conditions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// Placeholders a condition can test.
const (
	Status                = "[STATUS]"
	ResponseTime          = "[RESPONSE_TIME]"
	Body                  = "[BODY]"
	CertificateExpiration = "[CERTIFICATE_EXPIRATION]"
	Connected             = "[CONNECTED]"
)

// operators, longest first so that "<=" is not read as "<".
var operators = []string{"==", "!=", "<=", ">=", "<", ">"}

// kind is what a right-hand side must be.
type kind int

const (
	kindNumber kind = iota
	kindDuration
	kindBool
	kindText // a string, a number or a bool, compared as JSON would give it
)

// Condition is one parsed condition.
type Condition struct {
	raw      string
	left     string   // one of the placeholders
	jsonPath []string // for [BODY].a.b[0]: ["a", "b", "[0]"]
	op       string
	right    string // the literal as written (trimmed)
	pattern  bool   // right is pat(...): a glob matched with path.Match
	number   float64
	duration time.Duration
	boolean  bool
}

// String returns the condition as written in the config.
func (c Condition) String() string { return c.raw }

// Placeholder is the condition's left side without a JSON path: [STATUS], [BODY] and so on.
func (c Condition) Placeholder() string { return c.left }

// NeedsBody reports whether the condition reads the response body.
func (c Condition) NeedsBody() bool { return c.left == Body }

// Parse reads one condition. The error says what is wrong and how to write it.
func Parse(raw string) (Condition, error) {
	c := Condition{raw: raw}
	s := strings.TrimSpace(raw)
	if s == "" {
		return c, errors.New("the condition is empty; write e.g. [STATUS] == 200")
	}
	op, at := "", -1
	for i := 0; i < len(s) && at < 0; i++ {
		for _, o := range operators {
			if strings.HasPrefix(s[i:], o) {
				op, at = o, i
				break
			}
		}
	}
	if at < 0 {
		return c, errors.New("no comparison operator; use one of == != < <= > >=, e.g. [STATUS] == 200")
	}
	left := strings.TrimSpace(s[:at])
	right := strings.TrimSpace(s[at+len(op):])
	c.op, c.right = op, right
	if right == "" {
		return c, fmt.Errorf("nothing to compare with after %q", op)
	}
	var err error
	switch {
	case left == Status:
		c.left = Status
		err = c.literal(kindNumber)
		if err == nil && (c.number != float64(int(c.number)) || c.number < 100 || c.number > 999) {
			err = fmt.Errorf("%s is not an HTTP status code (100..999)", right)
		}
	case left == ResponseTime:
		c.left = ResponseTime
		err = c.literal(kindDuration)
	case left == CertificateExpiration:
		c.left = CertificateExpiration
		err = c.literal(kindDuration)
	case left == Connected:
		c.left = Connected
		err = c.literal(kindBool)
	case left == Body:
		c.left = Body
		err = c.literal(kindText)
	case strings.HasPrefix(left, Body+"."):
		c.left = Body
		c.jsonPath, err = parsePath(left[len(Body)+1:])
		if err == nil {
			err = c.literal(kindText)
		}
	default:
		hint := ""
		for _, p := range []string{Status, ResponseTime, Body, CertificateExpiration, Connected} {
			if strings.EqualFold(left, p) || strings.HasPrefix(strings.ToUpper(left), p+".") {
				hint = fmt.Sprintf(" (placeholders are upper case: %s)", p)
			}
		}
		return c, fmt.Errorf("unknown placeholder %q%s; use [STATUS], [RESPONSE_TIME], [BODY], [BODY].field, [CERTIFICATE_EXPIRATION] or [CONNECTED]", left, hint)
	}
	if err != nil {
		return c, err
	}
	return c, nil
}

// literal reads the right-hand side as k and checks the operator fits it.
func (c *Condition) literal(k kind) error {
	ordered := c.op != "==" && c.op != "!="
	switch k {
	case kindNumber:
		v, err := strconv.ParseFloat(c.right, 64)
		if err != nil {
			return fmt.Errorf("%s compares with a number, not %q", c.left, c.right)
		}
		c.number = v
	case kindDuration:
		// A plain number is milliseconds for [RESPONSE_TIME] and hours would be a guess for
		// [CERTIFICATE_EXPIRATION], so there only a duration with a unit is accepted.
		if v, err := strconv.ParseFloat(c.right, 64); err == nil && c.left == ResponseTime {
			c.duration = time.Duration(v * float64(time.Millisecond))
		} else if d, err := time.ParseDuration(c.right); err == nil {
			c.duration = d
		} else if c.left == ResponseTime {
			return fmt.Errorf("%s compares with milliseconds (500) or a duration (500ms), not %q", c.left, c.right)
		} else {
			return fmt.Errorf("%s compares with a duration such as 72h, not %q", c.left, c.right)
		}
	case kindBool:
		v, err := strconv.ParseBool(c.right)
		if err != nil || (c.right != "true" && c.right != "false") {
			return fmt.Errorf("%s compares with true or false, not %q", c.left, c.right)
		}
		c.boolean = v
		if ordered {
			return fmt.Errorf("%s can only be compared with == or !=", c.left)
		}
	case kindText:
		if strings.HasPrefix(c.right, "pat(") {
			if !strings.HasSuffix(c.right, ")") {
				return fmt.Errorf("pattern %q is not closed; write pat(*UP*)", c.right)
			}
			if ordered {
				return errors.New("a pattern can only be compared with == or !=")
			}
			c.pattern = true
			c.right = c.right[len("pat(") : len(c.right)-1]
			if _, err := path.Match(c.right, ""); err != nil {
				return fmt.Errorf("pattern %q is malformed: %v", c.right, err)
			}
			return nil
		}
		if ordered {
			v, err := strconv.ParseFloat(c.right, 64)
			if err != nil {
				return fmt.Errorf("%s compares with a number, not %q", c.op, c.right)
			}
			c.number = v
		}
	}
	return nil
}

// parsePath splits "checks[0].ok" into ["checks", "[0]", "ok"].
func parsePath(p string) ([]string, error) {
	if p == "" {
		return nil, errors.New("[BODY]. needs a field name, e.g. [BODY].status")
	}
	var out []string
	for _, part := range strings.Split(p, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name == "" && rest == "" {
			return nil, fmt.Errorf("empty field name in [BODY].%s", p)
		}
		if name != "" {
			out = append(out, name)
		}
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			if n, err := strconv.Atoi(idx); !ok || err != nil || n < 0 {
				return nil, fmt.Errorf("bad index in [BODY].%s; write e.g. [BODY].checks[0].ok", p)
			}
			out = append(out, "["+idx+"]")
			if after == "" {
				break
			}
			if !strings.HasPrefix(after, "[") {
				return nil, fmt.Errorf("bad index in [BODY].%s; write e.g. [BODY].checks[0].ok", p)
			}
			rest = after[1:]
		}
	}
	return out, nil
}

// ParseAll parses every condition; the error names the first bad one.
func ParseAll(raw []string) ([]Condition, error) {
	out := make([]Condition, 0, len(raw))
	for _, r := range raw {
		c, err := Parse(r)
		if err != nil {
			return nil, fmt.Errorf("condition %q: %w", r, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Observation is what a probe saw. Fields a probe type cannot see stay zero; a condition on
// them then fails with an observed value that says so.
type Observation struct {
	StatusCode       int           // HTTP status, 0 without a response
	ResponseTime     time.Duration // the probe's latency
	Body             []byte        // at most the 1 MiB the prober reads
	CertificateValid time.Duration // time until the leaf certificate expires; see HasCertificate
	HasCertificate   bool
	Connected        bool // a connection (or DNS answer) was established
}

// Failure is the first condition that did not hold and what was observed instead.
type Failure struct {
	Condition string
	Observed  string
}

func (f Failure) Error() string {
	return fmt.Sprintf("condition %s failed: observed %s", f.Condition, f.Observed)
}

// Evaluate checks every condition in order and returns the first that fails, or nil.
// The body is decoded as JSON at most once, and only when a condition needs a field of it.
func Evaluate(conds []Condition, o Observation) *Failure {
	var doc any
	decoded, docErr := false, error(nil)
	for _, c := range conds {
		ok, observed := false, ""
		switch c.left {
		case Status:
			ok, observed = compareNumber(float64(o.StatusCode), c.op, c.number), strconv.Itoa(o.StatusCode)
		case ResponseTime:
			ok = compareNumber(float64(o.ResponseTime), c.op, float64(c.duration))
			observed = strconv.FormatInt(o.ResponseTime.Milliseconds(), 10) + "ms"
		case CertificateExpiration:
			if !o.HasCertificate {
				observed = "no certificate"
				break
			}
			ok = compareNumber(float64(o.CertificateValid), c.op, float64(c.duration))
			observed = o.CertificateValid.Round(time.Minute).String()
		case Connected:
			ok, observed = (o.Connected == c.boolean) == (c.op == "=="), strconv.FormatBool(o.Connected)
		case Body:
			if c.jsonPath == nil {
				ok, observed = compareText(string(o.Body), c), shorten(string(o.Body))
				break
			}
			if !decoded {
				decoded = true
				docErr = json.NewDecoder(bytes.NewReader(o.Body)).Decode(&doc)
			}
			if docErr != nil {
				observed = "a body that is not JSON"
				break
			}
			v, found := lookup(doc, c.jsonPath)
			if !found {
				observed = "no such field"
				break
			}
			text := jsonText(v)
			ok, observed = compareText(text, c), shorten(text)
		}
		if !ok {
			return &Failure{Condition: c.raw, Observed: observed}
		}
	}
	return nil
}

func compareNumber(got float64, op string, want float64) bool {
	switch op {
	case "==":
		return got == want
	case "!=":
		return got != want
	case "<":
		return got < want
	case "<=":
		return got <= want
	case ">":
		return got > want
	case ">=":
		return got >= want
	}
	return false
}

func compareText(got string, c Condition) bool {
	switch {
	case c.pattern:
		m, _ := path.Match(c.right, got)
		return m == (c.op == "==")
	case c.op == "==":
		return got == c.right
	case c.op == "!=":
		return got != c.right
	}
	v, err := strconv.ParseFloat(got, 64)
	return err == nil && compareNumber(v, c.op, c.number)
}

func lookup(doc any, p []string) (any, bool) {
	for _, step := range p {
		if strings.HasPrefix(step, "[") {
			arr, ok := doc.([]any)
			i, _ := strconv.Atoi(step[1 : len(step)-1])
			if !ok || i >= len(arr) {
				return nil, false
			}
			doc = arr[i]
			continue
		}
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil, false
		}
		if doc, ok = obj[step]; !ok {
			return nil, false
		}
	}
	return doc, true
}

// jsonText renders a JSON value the way a condition writes it: strings bare, numbers and
// booleans as literals, objects and arrays as compact JSON.
func jsonText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// shorten keeps an observed value readable on the dashboard.
func shorten(s string) string {
	const limit = 120
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:limit]) + "…"
}

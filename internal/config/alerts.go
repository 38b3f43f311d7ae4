package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Alert and webhook defaults and limits.
const (
	DefaultSuccessThreshold   = 1
	DefaultBaseURL            = "http://localhost:8080"
	DefaultAlertRetryBase     = 10 * time.Second
	DefaultAlertRetryCap      = 10 * time.Minute
	DefaultWebhookFormat      = "json"
	DefaultWebhookTimeout     = 10 * time.Second
	DefaultWebhookMaxAttempts = 8

	maxWebhookTimeout     = time.Minute
	maxWebhookMaxAttempts = 50
)

// WebhookFormats are the bodies a webhook can be sent: Vigil's own JSON, or the message
// shapes Slack and Discord incoming webhooks accept.
var WebhookFormats = []string{"json", "slack", "discord"}

// Alerts says when status changes are announced and where they are sent.
type Alerts struct {
	FailureThreshold int // consecutive DOWN results before a DOWN alert; default 1, at least 1
	SuccessThreshold int // consecutive UP results before the recovery alert; default 1, at least 1
	// AlertBeforeFirstUp announces DOWN for a service that has never been seen UP (a new
	// service that is broken from the start). Off by default: a service that never worked
	// is not an outage.
	AlertBeforeFirstUp bool
	BaseURL            string        // where Vigil's pages are reached, for links in alerts; default http://localhost:8080
	RetryBase          time.Duration // first delivery retry backoff; default 10s
	RetryCap           time.Duration // delivery backoff ceiling; default 10m, at least RetryBase
	Webhooks           []Webhook
}

// Webhook is an endpoint that receives alerts as HTTP POSTs.
//
// URL and header values may name environment variables as ${NAME}; they are resolved when
// the file is read, and an unset or empty variable is an error. $$ stands for a literal $.
type Webhook struct {
	Name        string
	URL         string            // http or https, with a host
	Headers     map[string]string // sent with every POST, values resolved
	Events      []string          // "down", "up" or both (the default)
	Format      string            // json (default), slack or discord
	Timeout     time.Duration     // per POST; default 10s, at most 1m
	MaxAttempts int               // tries before a delivery is FAILED; default 8, 1..50

	// urlTemplate is the url as written when it names a variable, so a message about a bad
	// url can name the variable instead of printing a secret.
	urlTemplate string
}

// Sends reports whether the webhook wants events of kind ("DOWN" or "UP").
func (w Webhook) Sends(kind string) bool {
	return slices.Contains(w.Events, strings.ToLower(kind))
}

func defaultAlerts() Alerts {
	return Alerts{
		FailureThreshold: DefaultFailureThreshold,
		SuccessThreshold: DefaultSuccessThreshold,
		BaseURL:          DefaultBaseURL,
		RetryBase:        DefaultAlertRetryBase,
		RetryCap:         DefaultAlertRetryCap,
	}
}

// DefaultWebhook is a webhook with every optional field at its default.
func DefaultWebhook(name, url string) Webhook {
	return Webhook{
		Name: name, URL: url,
		Events:      []string{"down", "up"},
		Format:      DefaultWebhookFormat,
		Timeout:     DefaultWebhookTimeout,
		MaxAttempts: DefaultWebhookMaxAttempts,
	}
}

var (
	alertsFields = []string{"failure_threshold", "success_threshold", "alert_before_first_up", "base_url",
		"retry_base", "retry_cap", "webhooks"}
	webhookFields = []string{"name", "url", "headers", "events", "format", "timeout", "max_attempts"}
)

// alerts reads the alerts section.
func (d *decoder) alerts(root *mappingFields, a *Alerts) {
	af := d.section(root, "alerts", "write it as alerts: followed by failure_threshold: and webhooks: on indented lines", alertsFields)
	if af == nil {
		return
	}
	sc := scope{path: "alerts"}
	d.integer(af, sc, "failure_threshold", &a.FailureThreshold)
	d.integer(af, sc, "success_threshold", &a.SuccessThreshold)
	d.boolean(af, sc, "alert_before_first_up", &a.AlertBeforeFirstUp)
	d.text(af, sc, "base_url", &a.BaseURL)
	d.duration(af, sc, "retry_base", &a.RetryBase)
	d.duration(af, sc, "retry_cap", &a.RetryCap)
	for i, item := range d.list(af, "webhooks", `write each webhook as an item starting with "- name: ops"`) {
		path := fmt.Sprintf("alerts.webhooks[%d]", i)
		a.Webhooks = append(a.Webhooks, DefaultWebhook("", ""))
		w := &a.Webhooks[i]
		wf := d.item(item, path, webhookFields, `write each webhook as "- name: ops" followed by url:`)
		if wf == nil {
			continue
		}
		d.text(wf, scope{path: path, owner: path}, "name", &w.Name)
		wsc := itemScope("webhook", path, w.Name)
		d.report(wsc, item, wf, webhookFields)
		d.text(wf, wsc, "url", &w.URL)
		if strings.Contains(w.URL, "$") {
			template := w.URL
			if v, ok := d.expand(wf, wsc, "url", "url", template); ok {
				w.URL = v
				if v != strings.ReplaceAll(template, "$$", "$") {
					w.urlTemplate = template
				}
			}
		}
		d.headers(wf, wsc, w)
		if events, ok := d.textList(wf, wsc, "events", "events: [down, up]"); ok {
			w.Events = events
			for j := range w.Events {
				w.Events[j] = strings.ToLower(w.Events[j])
			}
		}
		d.text(wf, wsc, "format", &w.Format)
		d.duration(wf, wsc, "timeout", &w.Timeout)
		d.integer(wf, wsc, "max_attempts", &w.MaxAttempts)
	}
}

// headers reads a webhook's headers: a mapping of header name to value.
func (d *decoder) headers(f *mappingFields, sc scope, w *Webhook) {
	if h := d.headerMap(f, sc, true); h != nil {
		w.Headers = h
	}
}

// headerMap reads the headers mapping of an item. With expand, ${NAME} references are
// resolved; without, they are checked (syntax, set on this replica) and kept as written,
// for values resolved later by whoever sends the request.
func (d *decoder) headerMap(f *mappingFields, sc scope, expand bool) map[string]string {
	n, ok := f.values["headers"]
	if !ok || isNull(n) {
		return nil
	}
	example := `headers: followed by one header per indented line, e.g. Authorization: "Bearer ${OPS_TOKEN}"`
	if n.Kind != yaml.MappingNode {
		d.fail(sc, "headers", n, "headers is "+kindName(n)+", not a mapping", "write "+example)
		return nil
	}
	headers := map[string]string{}
	seen := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := resolve(n.Content[i]), resolve(n.Content[i+1])
		if key.Kind != yaml.ScalarNode || isNull(key) {
			d.problems = append(d.problems, newProblem(sc, "headers", key.Line, "a header name is "+kindName(key), "write "+example))
			continue
		}
		name := key.Value
		field := "headers." + name
		d.lines[sc.field(field)] = key.Line
		if prev, dup := seen[strings.ToLower(name)]; dup {
			d.fail(sc, field, key, fmt.Sprintf("header %s is set more than once (also as %s)", quote(name), quote(prev)),
				"keep only one of them; header names ignore case")
			continue
		}
		seen[strings.ToLower(name)] = name
		if value.Kind != yaml.ScalarNode {
			d.fail(sc, field, value, fmt.Sprintf("header %s is %s, not a single value", quote(name), kindName(value)),
				"write the value as text, e.g. "+name+": \"Bearer ${OPS_TOKEN}\"")
			continue
		}
		text := value.Value
		if isNull(value) {
			text = ""
		}
		if v, ok := d.expand(f, sc, field, "header "+quote(name), text); ok {
			if !expand {
				v = text
			}
			headers[name] = v
		}
	}
	return headers
}

var envReference = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expand resolves ${NAME} references in text, reporting an unset or empty variable against
// field. what names the value in messages ("url", `header "Authorization"`); a value that
// may hold a secret is never printed.
func (d *decoder) expand(f *mappingFields, sc scope, field, what, text string) (string, bool) {
	line := f.lines[field]
	if line == 0 {
		line = d.lines[sc.field(field)]
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '$' || i+1 == len(text) {
			b.WriteByte(c)
			continue
		}
		switch text[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
		default:
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(text[i:], '}')
		name := ""
		if end > 0 {
			name = text[i+2 : i+end]
		}
		if end < 0 || !envReference.MatchString(name) {
			d.problems = append(d.problems, newProblem(sc, field, line,
				what+" has a ${ that does not start a variable reference",
				"write a variable as ${NAME} (letters, digits and _), or $${ for a literal ${"))
			d.quiet[sc.field(field)] = true
			return "", false
		}
		v, set := d.env[name]
		if !set || v == "" {
			state := "is not set"
			if set {
				state = "is empty"
			}
			d.problems = append(d.problems, newProblem(sc, field, line,
				fmt.Sprintf("%s uses ${%s}, which %s", what, name, state),
				fmt.Sprintf("set %s in the environment of every replica, or write the value in the file", name)))
			d.quiet[sc.field(field)] = true
			return "", false
		}
		b.WriteString(v)
		i += end
	}
	return b.String(), true
}

// textList reads a list of single values. A missing key reports false.
func (d *decoder) textList(f *mappingFields, sc scope, key, example string) ([]string, bool) {
	n, ok := f.values[key]
	if !ok {
		return nil, false
	}
	if isNull(n) {
		d.fail(sc, key, n, key+" has no value", "write e.g. "+example+", or delete the line to use the default")
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(sc, key, n, fmt.Sprintf("%s is %s, not a list", key, kindName(n)), "write it as a list, e.g. "+example)
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	for _, item := range n.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode || isNull(item) {
			d.fail(sc, key, item, fmt.Sprintf("an item of %s is %s, not a single value", key, kindName(item)),
				"write it as a list of names, e.g. "+example)
			return nil, false
		}
		out = append(out, item.Value)
	}
	return out, true
}

func (v *validator) alerts(a Alerts) {
	sc := scope{path: "alerts"}
	if a.FailureThreshold < 1 {
		v.report(sc, "failure_threshold", fmt.Sprintf("failure_threshold %d is less than 1", a.FailureThreshold),
			"set alerts.failure_threshold to 1 or more (1, the default, alerts on the first DOWN result)")
	}
	if a.SuccessThreshold < 1 {
		v.report(sc, "success_threshold", fmt.Sprintf("success_threshold %d is less than 1", a.SuccessThreshold),
			"set alerts.success_threshold to 1 or more (1, the default, announces recovery on the first UP result)")
	}
	if a.BaseURL == "" {
		v.report(sc, "base_url", "base_url is empty",
			"write the address operators open Vigil at, e.g. https://vigil.example.com, or delete the line for "+DefaultBaseURL)
	} else {
		v.url(sc, "base_url", a.BaseURL, "the address operators open Vigil at, e.g. https://vigil.example.com")
	}
	if a.RetryBase <= 0 {
		v.report(sc, "retry_base", "retry_base "+formatDuration(a.RetryBase)+" is not more than 0",
			"set alerts.retry_base to a positive duration such as 10s (the default)")
	} else if a.RetryCap < a.RetryBase {
		v.report(sc, "retry_cap",
			fmt.Sprintf("retry_cap %s is shorter than retry_base %s", formatDuration(a.RetryCap), formatDuration(a.RetryBase)),
			fmt.Sprintf("set alerts.retry_cap to %s or more, or lower alerts.retry_base", formatDuration(a.RetryBase)))
	}
	first := map[string]string{}
	for i, w := range a.Webhooks {
		path := fmt.Sprintf("alerts.webhooks[%d]", i)
		wsc := itemScope("webhook", path, w.Name)
		if v.name(wsc, "webhook", w.Name) {
			if prev, dup := first[w.Name]; dup {
				v.report(scope{path: path, owner: path}, "name", "duplicate webhook name "+quote(w.Name),
					v.at(prev)+" already uses it; give each webhook a unique name")
			} else {
				first[w.Name] = path
			}
		}
		v.webhook(wsc, w)
	}
}

func (v *validator) webhook(sc scope, w Webhook) {
	const purpose = "the address to POST alerts to, e.g. http://127.0.0.1:9000/hook"
	if w.urlTemplate != "" {
		// The value came from the environment and may be a secret (a Slack webhook URL is):
		// name the variable, never print the value.
		if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			v.report(sc, "url", "url "+quote(w.urlTemplate)+" does not resolve to an http or https URL with a host",
				"set the variable to the full address, e.g. https://hooks.slack.com/services/...")
		}
	} else {
		v.url(sc, "url", w.URL, purpose)
	}

	names := make([]string, 0, len(w.Headers))
	for name := range w.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		field := "headers." + name
		switch {
		case name == "" || strings.ContainsFunc(name, func(r rune) bool { return !isTokenChar(r) }):
			v.report(sc, field, "header name "+quote(name)+" is not a valid HTTP header name",
				"use letters, digits and - only, e.g. Authorization or X-Api-Key")
		case slices.Contains(reservedHeaders, strings.ToLower(name)):
			v.report(sc, field, "header "+quote(name)+" is set by Vigil itself",
				"remove it; Vigil sends Idempotency-Key, Content-Type and the body's length on every POST")
		case strings.ContainsFunc(w.Headers[name], func(r rune) bool { return r != '\t' && unicode.IsControl(r) }):
			// The value is not printed: it may be a secret.
			v.report(sc, field, "the value of header "+quote(name)+" contains a control character (a newline or similar)",
				"remove it from the value (or from the environment variable the value comes from)")
		}
	}

	if len(w.Events) == 0 {
		v.report(sc, "events", "events is empty", "list the events to send, e.g. events: [down, up], or delete the line to send both")
	}
	for _, e := range w.Events {
		if e != "down" && e != "up" {
			fix := "write events: [down], [up] or [down, up]"
			if s := suggest(e, []string{"down", "up"}); s != "" {
				fix = fmt.Sprintf("did you mean %q? ", s) + fix
			}
			v.report(sc, "events", "event "+quote(e)+" is not down or up", fix)
		}
	}
	if !slices.Contains(WebhookFormats, w.Format) {
		fix := "write format: json (Vigil's JSON, the default), slack or discord"
		if s := suggest(w.Format, WebhookFormats); s != "" {
			fix = fmt.Sprintf("did you mean %q? ", s) + fix
		}
		v.report(sc, "format", "format "+quote(w.Format)+" is not one of json, slack, discord", fix)
	}
	if w.Timeout <= 0 || w.Timeout > maxWebhookTimeout {
		v.report(sc, "timeout", "timeout "+formatDuration(w.Timeout)+" is outside (0, 1m]",
			"set timeout to a positive duration of at most 1m, e.g. 10s (the default)")
	}
	if w.MaxAttempts < 1 || w.MaxAttempts > maxWebhookMaxAttempts {
		v.report(sc, "max_attempts", fmt.Sprintf("max_attempts %d is outside 1..%d", w.MaxAttempts, maxWebhookMaxAttempts),
			fmt.Sprintf("set max_attempts between 1 and %d (default %d)", maxWebhookMaxAttempts, DefaultWebhookMaxAttempts))
	}
}

// reservedHeaders are set by Vigil or by HTTP itself on every POST.
var reservedHeaders = []string{"idempotency-key", "content-length", "host", "transfer-encoding", "connection"}

// isTokenChar reports whether r may appear in an HTTP header name (RFC 9110 token).
func isTokenChar(r rune) bool {
	return r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// envMap turns KEY=VALUE lines into a map; a later line wins, as in a shell.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

package monitoring

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/vigilhq/vigil/internal/version"
)

// Webhook is an alert receiver from the config file. Its URL and headers may hold secrets
// (a Slack webhook URL is one): they are never logged or stored.
type Webhook struct {
	Name        string
	URL         string
	Headers     map[string]string
	Events      []string // "DOWN", "UP"; empty means both
	Format      string   // json (default), slack or discord
	Timeout     time.Duration
	MaxAttempts int
}

// Sends reports whether the webhook receives events of kind (DOWN or UP).
func (w Webhook) Sends(kind string) bool {
	if len(w.Events) == 0 {
		return true
	}
	for _, e := range w.Events {
		if strings.EqualFold(e, kind) {
			return true
		}
	}
	return false
}

// IdempotencyKey is the same for every attempt to deliver an event to a webhook, from any
// replica, so a receiver can drop repeats. It is derived from the event key (itself derived
// from the job that raised the event) and the webhook's name.
func IdempotencyKey(eventKey, webhook string) string {
	sum := sha256.Sum256([]byte(eventKey + "\x00" + webhook))
	return "vigil-" + hex.EncodeToString(sum[:16])
}

// ServiceURL is the link to a service's page under baseURL.
func ServiceURL(baseURL, service string) string {
	return strings.TrimRight(baseURL, "/") + "/services/" + url.PathEscape(service)
}

// WebhookPayload is the body of a json-format webhook. The field names are a promise to
// receivers; docs/alerts.md describes them.
type WebhookPayload struct {
	EventID        int64     `json:"event_id"`
	EventKey       string    `json:"event_key"`
	IdempotencyKey string    `json:"idempotency_key"`
	Kind           string    `json:"kind"`
	Service        string    `json:"service"`
	Group          *string   `json:"group"`
	Slot           time.Time `json:"slot"`
	OccurredAt     time.Time `json:"occurred_at"`
	Reason         *string   `json:"reason"`
	LatencyMS      *float64  `json:"latency_ms"`
	HTTPStatus     *int      `json:"http_status"`
	DownSeconds    *float64  `json:"down_seconds"`
	TargetURL      string    `json:"target_url"`
	URL            string    `json:"url"`
	Text           string    `json:"text"`
}

// NewWebhookPayload builds the json body for an event delivered to webhook.
func NewWebhookPayload(e AlertEvent, webhook, baseURL string) WebhookPayload {
	p := WebhookPayload{
		EventID:        e.ID,
		EventKey:       e.Key,
		IdempotencyKey: IdempotencyKey(e.Key, webhook),
		Kind:           e.Kind,
		Service:        e.Service,
		Slot:           e.SlotTime(),
		OccurredAt:     e.CreatedAt.UTC(),
		LatencyMS:      e.LatencyMS,
		HTTPStatus:     e.HTTPStatus,
		DownSeconds:    e.DownSeconds,
		TargetURL:      e.TargetURL,
		URL:            ServiceURL(baseURL, e.Service),
		Text:           alertText(e),
	}
	if e.Group != "" {
		p.Group = &e.Group
	}
	if e.Reason != "" {
		p.Reason = &e.Reason
	}
	return p
}

// alertText is the one-line summary chat formats show.
func alertText(e AlertEvent) string {
	name := e.Service
	if e.Group != "" {
		name += " (" + e.Group + ")"
	}
	if e.Kind == "DOWN" {
		s := "🔴 " + name + " is DOWN"
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		return s
	}
	s := "✅ " + name + " is UP again"
	if e.DownSeconds != nil {
		s += " after " + humanDuration(time.Duration(*e.DownSeconds*float64(time.Second)))
	}
	return s
}

// humanDuration rounds a downtime for people: 42s, 5m30s, 5m, 2h15m, 2h, 3d4h.
func humanDuration(d time.Duration) string {
	if d >= 48*time.Hour {
		days := int(d / (24 * time.Hour))
		hours := int((d % (24 * time.Hour)).Round(time.Hour) / time.Hour)
		return fmt.Sprintf("%dd%dh", days, hours)
	}
	if d >= time.Hour {
		d = d.Round(time.Minute)
	} else {
		d = d.Round(time.Second)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// WebhookBody renders the body for a webhook's format: Vigil's JSON, or the {"text": ...}
// and {"content": ...} messages that Slack and Discord incoming webhooks accept.
func WebhookBody(format string, e AlertEvent, webhook, baseURL string) ([]byte, error) {
	p := NewWebhookPayload(e, webhook, baseURL)
	switch format {
	case "slack":
		// Slack reads &, < and > as markup; its link syntax is <url|label>.
		esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
		return json.Marshal(map[string]string{"text": esc.Replace(p.Text) + " <" + p.URL + "|details>"})
	case "discord":
		content := p.Text + "\n" + p.URL
		if runes := []rune(content); len(runes) > 2000 { // Discord's limit
			content = string(runes[:1990]) + "…"
		}
		// No @everyone or role pings from a reason text a target controls.
		return json.Marshal(map[string]any{"content": content, "allowed_mentions": map[string]any{"parse": []string{}}})
	case "", "json":
		return json.Marshal(p)
	}
	return nil, fmt.Errorf("unknown webhook format %q", format)
}

// SendResult is the outcome of one POST.
type SendResult struct {
	HTTPStatus int           // 0 when no response arrived
	Err        string        // why it was not delivered; "" when it was
	RetryAfter time.Duration // the receiver's Retry-After, if it sent one
}

// Delivered reports a 2xx answer.
func (r SendResult) Delivered() bool { return r.Err == "" }

// WebhookSender POSTs alerts.
type WebhookSender struct {
	client  *http.Client
	baseURL string
	agent   string
}

// NewWebhookSender builds a sender whose messages link to pages under baseURL. A nil
// client gets one that does not follow redirects.
func NewWebhookSender(baseURL string, client *http.Client) *WebhookSender {
	if client == nil {
		client = &http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			// A redirected POST is either re-sent as a GET or re-sent elsewhere; neither
			// is what the operator configured.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &WebhookSender{client: client, baseURL: baseURL, agent: "Vigil/" + version.String() + " (alert webhook)"}
}

// Send POSTs one delivery with the webhook's timeout. Only a 2xx counts as delivered.
// Errors name what went wrong without the URL, which may be a secret.
func (s *WebhookSender) Send(ctx context.Context, hook Webhook, d Delivery) SendResult {
	body, err := WebhookBody(hook.Format, d.Event, d.Webhook, s.baseURL)
	if err != nil {
		return SendResult{Err: err.Error()}
	}
	timeout := hook.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return SendResult{Err: "cannot build the request: check the webhook's url"}
	}
	for name, value := range hook.Headers {
		req.Header.Set(name, value)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.agent)
	req.Header.Set("Idempotency-Key", IdempotencyKey(d.Event.Key, d.Webhook))
	req.Header.Set("X-Vigil-Event", d.Event.Key)
	req.Header.Set("X-Vigil-Attempt", strconv.Itoa(d.Attempt))

	resp, err := s.client.Do(req)
	if err != nil {
		return SendResult{Err: sendError(ctx, err, timeout)}
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return SendResult{HTTPStatus: resp.StatusCode}
	}
	msg := "HTTP " + strconv.Itoa(resp.StatusCode)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		msg += " (redirects are not followed: point the webhook's url at the final address)"
	} else if text := cleanSnippet(snippet); text != "" {
		msg += ": " + text
	}
	return SendResult{HTTPStatus: resp.StatusCode, Err: msg, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
}

func sendError(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "no answer within " + timeout.String()
	}
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	// *url.Error prints the URL, which may be a secret; keep only what went wrong.
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return err.Error()
}

// cleanSnippet makes the start of a response body fit for one line of an error.
func cleanSnippet(b []byte) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(b), ""))
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// retryAfter reads a Retry-After header given in seconds; dates are ignored.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

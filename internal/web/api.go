package web

import (
	"time"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/templates"
)

// The JSON API's shapes. Field names are a promise to API users (see
// docs/api.md): add fields, never rename them. Times are RFC 3339 in UTC;
// a missing value is null, not an empty string.

type apiService struct {
	Name            string     `json:"name"`
	Group           *string    `json:"group"`
	URL             string     `json:"url"`
	Enabled         bool       `json:"enabled"`
	IntervalSeconds int        `json:"interval_seconds"`
	Status          string     `json:"status"`
	LastSlot        *time.Time `json:"last_slot"`
	LastCheckedAt   *time.Time `json:"last_checked_at"`
	LatencyMS       *float64   `json:"latency_ms"`
	CheckedBy       *string    `json:"checked_by"`
}

type apiUptime struct {
	Day   *float64 `json:"24h"`
	Week  *float64 `json:"7d"`
	Month *float64 `json:"30d"`
}

// apiServiceSummary is a service with what the overview and its own page add.
type apiServiceSummary struct {
	apiService
	TimeoutMS   int64      `json:"timeout_ms"`
	StatusSince *time.Time `json:"status_since"`
	HTTPStatus  *int       `json:"http_status"`
	Error       *string    `json:"error"`
	RetiredAt   *time.Time `json:"retired_at,omitempty"`
	// How the service is probed. Header, body and auth settings are not listed.
	ProbeType  string      `json:"probe_type"`
	Conditions []string    `json:"conditions"`
	Degraded   bool        `json:"degraded"` // the latest result was UP but slower than degraded_above
	Uptime     apiUptime   `json:"uptime"`
	Recent     []apiResult `json:"recent,omitempty"`
}

type apiResult struct {
	JobID      int64     `json:"job_id"`
	Slot       time.Time `json:"slot"`
	Status     string    `json:"status"`
	LatencyMS  float64   `json:"latency_ms"`
	HTTPStatus *int      `json:"http_status"`
	Error      *string   `json:"error"`
	Attempt    int       `json:"attempt"`
	ProbedBy   string    `json:"probed_by"`
	ObservedAt time.Time `json:"observed_at"`
	Degraded   bool      `json:"degraded"`
	// FailedCondition is the condition that made the result DOWN; error has the observed value.
	FailedCondition *string `json:"failed_condition"`
}

// apiJobResult is a job's result as DESIGN.md lists it.
type apiJobResult struct {
	Status     string    `json:"status"`
	LatencyMS  float64   `json:"latency_ms"`
	HTTPStatus *int      `json:"http_status"`
	Error      *string   `json:"error"`
	ProbedBy   string    `json:"probed_by"`
	ObservedAt time.Time `json:"observed_at"`
}

type apiJob struct {
	ID            int64         `json:"id"`
	Service       string        `json:"service"`
	Slot          time.Time     `json:"slot"`
	State         string        `json:"state"`
	Attempts      int           `json:"attempts"`
	MaxAttempts   int           `json:"max_attempts"`
	OwnerInstance *string       `json:"owner_instance"`
	LeaseUntil    *time.Time    `json:"lease_until"`
	AvailableAt   time.Time     `json:"available_at"`
	LastError     *string       `json:"last_error"`
	Result        *apiJobResult `json:"result"`
}

type apiInstance struct {
	Name        string     `json:"name"`
	Addr        string     `json:"addr"`
	Version     string     `json:"version"`
	StartedAt   time.Time  `json:"started_at"`
	HeartbeatAt time.Time  `json:"heartbeat_at"`
	Live        bool       `json:"live"`
	StoppedAt   *time.Time `json:"stopped_at"`
	JobsHeld    int64      `json:"jobs_held"`
	Completed5m int64      `json:"completed_5m"`
	// Completions rejected since the replica started: its lease had passed on.
	StaleCompletions int64 `json:"stale_completions"`
}

type apiAlert struct {
	ID          int64     `json:"id"`
	Service     string    `json:"service"`
	Kind        string    `json:"kind"`
	Reason      *string   `json:"reason"`
	DownSeconds *float64  `json:"down_seconds"`
	Slot        time.Time `json:"slot"`
	JobID       int64     `json:"job_id"`
	CreatedAt   time.Time `json:"created_at"`
	// RoutedAt is null until a dispatcher has split the event into its
	// deliveries; routed with no deliveries means no webhook takes its kind.
	RoutedAt   *time.Time    `json:"routed_at"`
	Deliveries []apiDelivery `json:"deliveries"`
}

type apiDelivery struct {
	Webhook        string     `json:"webhook"`
	State          string     `json:"state"`
	Attempts       int        `json:"attempts"`
	MaxAttempts    int        `json:"max_attempts"`
	LastError      *string    `json:"last_error"`
	LastHTTPStatus *int       `json:"last_http_status"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
	FinishedAt     *time.Time `json:"finished_at"`
}

type apiSeries struct {
	Range         string           `json:"range"`
	Start         time.Time        `json:"start"`
	BucketSeconds int64            `json:"bucket_seconds"`
	Points        []apiSeriesPoint `json:"points"`
}

type apiSeriesPoint struct {
	Start        time.Time `json:"start"`
	Total        int64     `json:"total"`
	Up           int64     `json:"up"`
	AvgLatencyMS *float64  `json:"avg_latency_ms"`
	MaxLatencyMS *float64  `json:"max_latency_ms"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func utc(t time.Time) time.Time { return t.UTC() }

func optUTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func optPercent(r monitoring.Ratio) *float64 {
	p, ok := r.Percent()
	if !ok {
		return nil
	}
	return &p
}

func toAPIService(s monitoring.ServiceStatus) apiService {
	return apiService{
		Name: s.Name, Group: optString(s.Group), URL: templates.RedactURL(s.URL), Enabled: s.Enabled,
		IntervalSeconds: int(s.Interval / time.Second), Status: s.Status,
		LastSlot: optUTC(s.LastSlotTime), LastCheckedAt: optUTC(s.CheckedAt), LatencyMS: s.LatencyMS,
		CheckedBy: optString(s.CheckedBy),
	}
}

func toAPIServiceSummary(s monitoring.ServiceSummary) apiServiceSummary {
	var lastSlot *time.Time
	if s.LastSlot != nil {
		t := monitoring.SlotTime(*s.LastSlot)
		lastSlot = &t
	}
	out := apiServiceSummary{
		apiService: apiService{
			Name: s.Name, Group: optString(s.Group), URL: templates.RedactURL(s.URL), Enabled: s.Enabled,
			IntervalSeconds: int(s.Interval / time.Second), Status: s.Status,
			LastSlot: lastSlot, LastCheckedAt: optUTC(s.CheckedAt), LatencyMS: s.LatencyMS,
			CheckedBy: optString(s.CheckedBy),
		},
		TimeoutMS: s.Timeout.Milliseconds(), StatusSince: optUTC(s.StatusSince), HTTPStatus: s.HTTPStatus,
		Error: optString(s.Error), RetiredAt: optUTC(s.RetiredAt),
		ProbeType: s.Probe.ProbeType(), Conditions: append([]string{}, s.Probe.Conditions...), Degraded: s.Degraded,
		Uptime: apiUptime{Day: optPercent(s.Uptime.Day), Week: optPercent(s.Uptime.Week), Month: optPercent(s.Uptime.Month)},
	}
	for _, r := range s.Recent {
		out.Recent = append(out.Recent, toAPIResult(r))
	}
	return out
}

func toAPIResult(r monitoring.Result) apiResult {
	return apiResult{
		JobID: r.JobID, Slot: r.SlotTime(), Status: r.Status, LatencyMS: r.LatencyMS, HTTPStatus: r.HTTPStatus,
		Error: optString(r.Error), Attempt: r.Attempt, ProbedBy: r.ProbedBy, ObservedAt: utc(r.ObservedAt),
		Degraded: r.Degraded, FailedCondition: optString(r.FailedCondition),
	}
}

func toAPIJob(j monitoring.JobRow) apiJob {
	out := apiJob{
		ID: j.ID, Service: j.Service, Slot: monitoring.SlotTime(j.Slot), State: j.State,
		Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, OwnerInstance: optString(j.OwnerInstance),
		LeaseUntil: optUTC(j.LeaseUntil), AvailableAt: utc(j.AvailableAt), LastError: optString(j.LastError),
	}
	if r := j.Result; r != nil {
		out.Result = &apiJobResult{Status: r.Status, LatencyMS: r.LatencyMS, HTTPStatus: r.HTTPStatus,
			Error: optString(r.Error), ProbedBy: r.ProbedBy, ObservedAt: utc(r.ObservedAt)}
	}
	return out
}

func toAPIInstance(in monitoring.InstanceRow) apiInstance {
	return apiInstance{
		Name: in.Name, Addr: in.Addr, Version: in.Version, StartedAt: utc(in.StartedAt),
		HeartbeatAt: utc(in.HeartbeatAt), Live: in.Live, StoppedAt: optUTC(in.StoppedAt),
		JobsHeld: in.JobsHeld, Completed5m: in.Completed, StaleCompletions: in.StaleCompletions,
	}
}

func toAPIAlert(a monitoring.Alert, deliveries []monitoring.DeliveryRow) apiAlert {
	out := apiAlert{
		ID: a.ID, Service: a.Service, Kind: a.Kind, Reason: optString(a.Reason), DownSeconds: a.DownSeconds,
		Slot: monitoring.SlotTime(a.Slot), JobID: a.JobID, CreatedAt: utc(a.CreatedAt), RoutedAt: optUTC(a.RoutedAt),
		Deliveries: make([]apiDelivery, len(deliveries)),
	}
	for i, d := range deliveries {
		out.Deliveries[i] = apiDelivery{
			Webhook: d.Webhook, State: d.State, Attempts: d.Attempts, MaxAttempts: d.MaxAttempts,
			LastError: optString(d.LastError), LastHTTPStatus: d.LastHTTPStatus,
			NextAttemptAt: optUTC(d.NextAttemptAt), FinishedAt: optUTC(d.FinishedAt),
		}
	}
	return out
}

func toAPISeries(rangeName string, s monitoring.Series) apiSeries {
	out := apiSeries{Range: rangeName, Start: s.Start, BucketSeconds: int64(s.Bucket / time.Second),
		Points: make([]apiSeriesPoint, len(s.Points))}
	for i, p := range s.Points {
		out.Points[i] = apiSeriesPoint{Start: p.Start, Total: p.Total, Up: p.Up}
		if p.Total > 0 {
			avg, mx := p.AvgLatencyMS, p.MaxLatencyMS
			out.Points[i].AvgLatencyMS, out.Points[i].MaxLatencyMS = &avg, &mx
		}
	}
	return out
}

package monitoring

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// The read side of alert delivery, for the /alerts page, its JSON API and the CLI. Reads
// are bounded and run in one short read-only transaction.

// DeliveryRow is one (event, webhook) delivery as an operator sees it.
type DeliveryRow struct {
	ID             int64
	EventID        int64
	EventKey       string
	Kind           string // DOWN or UP
	Service        string
	Webhook        string
	State          string // PENDING, SENDING, DELIVERED or FAILED
	Attempts       int
	MaxAttempts    int
	LastError      string
	LastHTTPStatus *int
	OwnerInstance  string     // the dispatcher that last claimed it
	NextAttemptAt  *time.Time // PENDING: when it becomes due
	LeaseUntil     *time.Time // SENDING: until when its dispatcher holds it
	CreatedAt      time.Time
	FinishedAt     *time.Time // DELIVERED or FAILED
	IdempotencyKey string
}

// DeliveryListParams filter and page the delivery list, newest first.
type DeliveryListParams struct {
	State   string // "" for all, else PENDING, SENDING, DELIVERED or FAILED
	Webhook string // "" for all
	Limit   int    // 0: 50; at most 200
	Before  int64  // cursor: only ids below it (0: from the newest)
}

// DeliveryPage is one page of deliveries.
type DeliveryPage struct {
	Deliveries []DeliveryRow
	Next       int64 // cursor of the next page, 0 if none
}

const deliveryRowColumns = `
d.id, d.event_id, e.event_key, e.kind, m.name, d.webhook, d.state, d.attempts, d.max_attempts,
coalesce(d.last_error, ''), d.last_http_status, coalesce(d.owner_instance, ''),
CASE WHEN d.state = 'PENDING' THEN d.available_at END, d.lease_until, d.created_at, d.finished_at`

func scanDeliveryRow(row pgx.CollectableRow) (DeliveryRow, error) {
	var d DeliveryRow
	err := row.Scan(&d.ID, &d.EventID, &d.EventKey, &d.Kind, &d.Service, &d.Webhook, &d.State,
		&d.Attempts, &d.MaxAttempts, &d.LastError, &d.LastHTTPStatus, &d.OwnerInstance,
		&d.NextAttemptAt, &d.LeaseUntil, &d.CreatedAt, &d.FinishedAt)
	d.IdempotencyKey = IdempotencyKey(d.EventKey, d.Webhook)
	return d, err
}

// DeliveryList pages deliveries by id, newest first, optionally of one state or webhook.
func (s *Store) DeliveryList(ctx context.Context, p DeliveryListParams) (DeliveryPage, error) {
	const q = `
SELECT ` + deliveryRowColumns + `
FROM alert_delivery d
JOIN alert_outbox e ON e.id = d.event_id
JOIN monitored_service m ON m.id = e.service_id
WHERE d.id < $1 AND ($3 = '' OR d.state = $3) AND ($4 = '' OR d.webhook = $4)
ORDER BY d.id DESC
LIMIT $2`
	limit := p.Limit
	switch {
	case limit <= 0:
		limit = 50
	case limit > 200:
		limit = 200
	}
	before := p.Before
	if before <= 0 {
		before = math.MaxInt64
	}
	var page DeliveryPage
	err := readOnly(ctx, s, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, q, before, limit+1, p.State, p.Webhook)
		if err != nil {
			return err
		}
		page.Deliveries, err = pgx.CollectRows(rows, scanDeliveryRow)
		return err
	})
	if err != nil {
		return DeliveryPage{}, fmt.Errorf("read deliveries: %w", err)
	}
	if len(page.Deliveries) > limit {
		page.Deliveries = page.Deliveries[:limit]
		page.Next = page.Deliveries[limit-1].ID
	}
	return page, nil
}

// EventDeliveries returns the deliveries of the given events (e.g. one page of the alert
// list), keyed by event id, each event's in webhook order.
func (s *Store) EventDeliveries(ctx context.Context, eventIDs []int64) (map[int64][]DeliveryRow, error) {
	const q = `
SELECT ` + deliveryRowColumns + `
FROM alert_delivery d
JOIN alert_outbox e ON e.id = d.event_id
JOIN monitored_service m ON m.id = e.service_id
WHERE d.event_id = ANY($1::bigint[])
ORDER BY d.event_id, d.webhook
LIMIT 10000`
	out := map[int64][]DeliveryRow{}
	if len(eventIDs) == 0 {
		return out, nil
	}
	err := readOnly(ctx, s, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, q, eventIDs)
		if err != nil {
			return err
		}
		list, err := pgx.CollectRows(rows, scanDeliveryRow)
		for _, d := range list {
			out[d.EventID] = append(out[d.EventID], d)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read event deliveries: %w", err)
	}
	return out, nil
}

// DeliveryCounts are the deliveries still in flight or given up, for a summary line on
// /alerts. Each count reads a partial index; DELIVERED rows are not counted (they grow
// until retention prunes them).
type DeliveryCounts struct {
	Pending, Sending, Failed int64
}

// DeliveryCounts counts the open and failed deliveries.
func (s *Store) DeliveryCounts(ctx context.Context) (DeliveryCounts, error) {
	const q = `
SELECT (SELECT count(*) FROM alert_delivery WHERE state = 'PENDING'),
       (SELECT count(*) FROM alert_delivery WHERE state = 'SENDING'),
       (SELECT count(*) FROM alert_delivery WHERE state = 'FAILED')`
	var c DeliveryCounts
	if err := s.pool.QueryRow(ctx, q).Scan(&c.Pending, &c.Sending, &c.Failed); err != nil {
		return c, fmt.Errorf("count deliveries: %w", err)
	}
	return c, nil
}

func readOnly(ctx context.Context, s *Store, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

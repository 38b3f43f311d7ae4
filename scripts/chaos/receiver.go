package main

import (
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// delivery is one webhook request the receiver saw.
type delivery struct {
	At             time.Time
	IdempotencyKey string
	Body           string
	Answered       int
}

// receiver is the run's webhook endpoint. It answers 500 to about one
// request in eight and is slow to about one in twenty, so deliveries are
// retried and the same event arrives more than once: each must carry one
// idempotency key every time.
type receiver struct {
	mu         sync.Mutex
	rng        *rand.Rand
	deliveries []delivery
}

func newReceiver(seed uint64) *receiver {
	return &receiver{rng: rand.New(rand.NewPCG(seed, 99))}
}

func (rv *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 256*1024))
	rv.mu.Lock()
	p := rv.rng.IntN(100)
	rv.mu.Unlock()
	code := http.StatusOK
	switch {
	case r.Method != http.MethodPost:
		code = http.StatusMethodNotAllowed
	case p < 12:
		code = http.StatusInternalServerError
	case p < 17:
		time.Sleep(1500 * time.Millisecond)
	}
	rv.mu.Lock()
	rv.deliveries = append(rv.deliveries, delivery{At: time.Now(), IdempotencyKey: r.Header.Get("Idempotency-Key"),
		Body: string(body), Answered: code})
	rv.mu.Unlock()
	w.WriteHeader(code)
}

func (rv *receiver) snapshot() []delivery {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return append([]delivery(nil), rv.deliveries...)
}

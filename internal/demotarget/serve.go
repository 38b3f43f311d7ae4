package demotarget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

const shutdownTimeout = 5 * time.Second

// Serve listens on addr and serves Handler until ctx is cancelled, then shuts
// down gracefully, waiting up to 5s for requests in flight. Requests waiting
// in /slow see the cancellation and answer 503 at once, so a shutdown is not
// held up by a long ?ms.
func Serve(ctx context.Context, addr string, logger *slog.Logger) error {
	return serve(ctx, addr, logger, Handler())
}

// serve is Serve with the handler given: tests wrap Handler to learn when a
// request has arrived.
func serve(ctx context.Context, addr string, logger *slog.Logger, handler http.Handler) error {
	if logger == nil {
		logger = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("demo target: listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       60 * time.Second,
		// Request contexts derive from ctx: cancelling it ends /slow waits.
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("demo target listening", "addr", ln.Addr().String())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		// Serve stopped on its own: ctx was never cancelled, so this is a failure.
		return fmt.Errorf("demo target: serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}

	logger.Info("demo target shutting down", "addr", ln.Addr().String())
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("demo target: shut down within %s: %w", shutdownTimeout, err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("demo target: serve on %s: %w", ln.Addr(), err)
	}
	return nil
}

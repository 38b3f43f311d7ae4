// Command load measures Vigil under load: a fresh durable PostgreSQL, a local
// demo target, N services at one interval over a few groups, R replicas of the
// server binary; it runs for a duration, then prints what the database and
// /proc say happened (docs/performance.md).
//
//	go run ./scripts/load -services 10000 -replicas 2 -duration 120s
//	make load SERVICES=10000 REPLICAS=2 DURATION=120s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type options struct {
	Services int
	Replicas int
	Duration time.Duration
	Interval time.Duration
	Warmup   time.Duration
	Groups   int
	Workers  int
	Poll     time.Duration
	Spread   time.Duration
	Segment  time.Duration
	Binary   string
	Keep     bool
}

func main() {
	var o options
	flag.IntVar(&o.Services, "services", 1000, "services to monitor")
	flag.IntVar(&o.Replicas, "replicas", 2, "replicas to run")
	flag.DurationVar(&o.Duration, "duration", 120*time.Second, "measured window, after every replica is ready; at least 2 intervals")
	flag.DurationVar(&o.Interval, "interval", 30*time.Second, "every service's interval")
	flag.DurationVar(&o.Warmup, "warmup", 30*time.Second, "run before the window opens, so the start-up slot's burst is not measured")
	flag.IntVar(&o.Groups, "groups", 5, "groups the services are spread over")
	flag.IntVar(&o.Workers, "workers", 64, "scheduler.workers of each replica")
	flag.DurationVar(&o.Poll, "poll", 250*time.Millisecond, "scheduler.poll of each replica")
	flag.DurationVar(&o.Spread, "spread", time.Minute, "scheduler.spread of each replica (0s: every check due at its slot's start)")
	flag.DurationVar(&o.Segment, "segment", 0, "also report lag, dead tuples and RSS per segment of this length, and the last against the first (a soak: -duration 60m -segment 10m)")
	flag.StringVar(&o.Binary, "binary", "", "server binary to run (default: go build ./cmd/server once)")
	flag.BoolVar(&o.Keep, "keep", false, "keep the run's directory (database, logs, config)")
	flag.Parse()
	if o.Services < 1 || o.Replicas < 1 || o.Groups < 1 || o.Workers < 1 {
		fmt.Fprintln(os.Stderr, "load: -services, -replicas, -groups and -workers must be at least 1")
		os.Exit(2)
	}
	if o.Duration < 2*o.Interval {
		fmt.Fprintf(os.Stderr, "load: -duration %s is shorter than two intervals (%s): no whole slot would be measured\n", o.Duration, 2*o.Interval)
		os.Exit(2)
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "load: %v received; stopping everything the run started\n", sig)
		stop()
	}()
	h, err := newHarness(o, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
		os.Exit(1)
	}
	rep, err := h.run(ctx)
	h.close(err != nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
		os.Exit(1)
	}
	rep.print(os.Stdout)
	printSoak(os.Stdout, rep.soak)
}

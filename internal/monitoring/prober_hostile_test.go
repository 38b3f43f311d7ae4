package monitoring_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// hostileTarget is a raw TCP server that misbehaves in one way per path.
func hostileTarget(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		ln.Close()
		conns.Wait()
	})
	chunk := []byte(strings.Repeat("x", 32*1024))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				finished := make(chan struct{})
				defer close(finished)
				go func() { // unblock writes and reads at cleanup
					select {
					case <-done:
						c.Close()
					case <-finished:
					}
				}()
				br := bufio.NewReader(c)
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				switch {
				case strings.Contains(line, "/endless-body"):
					// Past the 1 MiB cap the body never ends: the server stops
					// writing (sparing the CPU) but never closes.
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
					for range 33 {
						if _, err := c.Write(chunk); err != nil {
							return
						}
					}
					_, _ = io.Copy(io.Discard, br)
				case strings.Contains(line, "/endless-header"):
					// A header line that runs past any sane limit and never ends.
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Endless: ")
					for range 16 * 32 {
						if _, err := c.Write(chunk); err != nil {
							return
						}
					}
					_, _ = io.Copy(io.Discard, br)
				case strings.Contains(line, "/invalid-utf8"):
					_, _ = io.WriteString(c, "HTTP/1.1 302 \xff\xfe\r\nLocation: /\xc3\x28\xa0\xa1\r\nX-Bad: \xed\xa0\x80\r\nContent-Length: 4\r\n\r\n\xff\xfe\xfd\xfc")
				case strings.Contains(line, "/invalid-status"):
					_, _ = io.WriteString(c, "HTTP/1.1 2\xff0 OK\r\n\r\n")
				default: // never answers; gone when the client hangs up
					_, _ = io.Copy(io.Discard, br)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func rssKiB(t *testing.T) int {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

// A target that sends an endless body, an endless header, invalid UTF-8 or
// never answers gets a DOWN (or capped UP) result with a reason that can be
// stored as text, and 1,000 such probes leave no goroutines or memory behind.
func TestHostileTargetsLeakNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 probes")
	}
	base := hostileTarget(t)
	prober := monitoring.NewHTTPProber(time.Second)
	paths := []string{"/endless-body", "/endless-header", "/invalid-utf8", "/invalid-status", "/never"}

	probeAll := func(n int) {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 20)
		for i := range n {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				path := paths[i%len(paths)]
				timeout := 300 * time.Millisecond
				if path == "/endless-body" {
					timeout = 5 * time.Second // reading the 1 MiB it keeps must not time out
				}
				r := prober.Probe(context.Background(), base+path, timeout)
				if !utf8.ValidString(r.Error) || len(r.Error) > 4096 {
					t.Errorf("%s: reason not storable as text: %q", path, r.Error)
				}
				if path == "/endless-body" && r.Status != "UP" {
					t.Errorf("%s: %s %q; a 200 whose body is cut at 1 MiB is UP", path, r.Status, r.Error)
				}
				if path != "/endless-body" && r.Status != "DOWN" {
					t.Errorf("%s: %s, want DOWN", path, r.Status)
				}
			}()
		}
		wg.Wait()
	}
	settle := func() (goroutines int, heap uint64) {
		var ms runtime.MemStats
		// Kept-alive connections are a pool, not a leak; how many survive a batch of
		// hostile probes varies from run to run (each holds three goroutines).
		prober.CloseIdleConnections()
		for range 20 {
			runtime.GC()
			time.Sleep(50 * time.Millisecond)
		}
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapAlloc
	}

	probeAll(100) // warm up: the transport's idle pool and the runtime settle in
	g0, h0 := settle()
	r0 := rssKiB(t)
	probeAll(1000)
	g1, h1 := settle()
	r1 := rssKiB(t)
	t.Logf("after 1,000 hostile probes: goroutines %d -> %d, heap %d KiB -> %d KiB, RSS %d KiB -> %d KiB",
		g0, g1, h0/1024, h1/1024, r0, r1)
	require.LessOrEqual(t, g1, g0+10, "goroutines leaked")
	require.Less(t, int64(h1)-int64(h0), int64(16<<20), "heap grew by more than 16 MiB")
	if r0 > 0 {
		require.Less(t, r1-r0, 256*1024, "RSS grew by more than 256 MiB")
	}
}

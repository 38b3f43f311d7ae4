package main

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// proxy sits between one replica and PostgreSQL. It can delay every chunk
// of data in both directions (a slow network) and cut every connection at
// once, refusing new ones for a while (a network partition; for the outage
// length it is, from the replica's side, a database that is not there).
type proxy struct {
	ln      net.Listener
	backend string
	latency atomic.Int64 // nanoseconds added before each forwarded chunk

	mu          sync.Mutex
	conns       map[net.Conn]struct{}
	refuseUntil time.Time
	cuts        int // bumped by every cut: a connection accepted before a cut never joins after it
	closed      bool
	wg          sync.WaitGroup
}

func newProxy(backend string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, backend: backend, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) setLatency(d time.Duration) { p.latency.Store(int64(d)) }

// cut closes every open connection and refuses new ones for refuse.
func (p *proxy) cut(refuse time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuseUntil = time.Now().Add(refuse)
	p.cuts++
	n := 0
	for c := range p.conns {
		c.Close()
		n++
	}
	return n / 2 // each proxied connection has two ends
}

// heal ends a refusal early and removes any latency.
func (p *proxy) heal() {
	p.mu.Lock()
	p.refuseUntil = time.Time{}
	p.mu.Unlock()
	p.setLatency(0)
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// refusing reports whether a new connection must be dropped now; it returns
// the cut generation a connection accepted now belongs to.
func (p *proxy) refusing() (bool, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed || time.Now().Before(p.refuseUntil), p.cuts
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		refuse, gen := p.refusing()
		if refuse {
			client.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(client, gen)
	}
}

func (p *proxy) serve(client net.Conn, gen int) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.backend, 2*time.Second)
	if err != nil {
		client.Close() // PostgreSQL is down: the client sees the connection drop
		return
	}
	if !p.track(client, server, gen) {
		return
	}
	var done sync.WaitGroup
	done.Add(2)
	go func() { defer done.Done(); p.pipe(server, client) }()
	go func() { defer done.Done(); p.pipe(client, server) }()
	done.Wait()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// track registers a proxied connection unless the proxy closed or cut
// connections since it was accepted (it would otherwise slip through a cut
// while its dial was under way).
func (p *proxy) track(a, b net.Conn, gen int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.cuts != gen || time.Now().Before(p.refuseUntil) {
		a.Close()
		b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

// pipe copies src to dst, delaying each chunk by the current latency, and
// closes both ends when either fails.
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.latency.Load()); d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // io.EOF or a closed end: either way the connection is over
		}
	}
}

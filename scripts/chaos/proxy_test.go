package main

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echoBackend accepts connections and echoes each line back.
func echoBackend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through c and reads it back; it fails when the
// connection is dropped.
func roundTrip(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

func dialProxy(t *testing.T, p *proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestProxyCutRefusesUntilHealed(t *testing.T) {
	t.Parallel()
	p, err := newProxy(echoBackend(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	before := dialProxy(t, p)
	if err := roundTrip(before); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	if n := p.cut(time.Hour); n != 1 {
		t.Errorf("cut closed %d connections, want 1", n)
	}
	if err := roundTrip(before); err == nil {
		t.Error("a connection open at the cut still works")
	}
	if err := roundTrip(dialProxy(t, p)); err == nil {
		t.Error("a new connection during the refusal works")
	}
	p.heal()
	if err := roundTrip(dialProxy(t, p)); err != nil {
		t.Errorf("after heal: %v", err)
	}
}

func TestProxyCutEndsByItself(t *testing.T) {
	t.Parallel()
	p, err := newProxy(echoBackend(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	p.cut(200 * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for refusing, _ := p.refusing(); refusing; refusing, _ = p.refusing() {
		if time.Now().After(deadline) {
			t.Fatal("the refusal did not end by itself")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := roundTrip(dialProxy(t, p)); err != nil {
		t.Errorf("after the refusal ended: %v", err)
	}
}

func TestProxyConnectionAcceptedBeforeCutDoesNotSlipThrough(t *testing.T) {
	t.Parallel()
	p, err := newProxy(echoBackend(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	// What serve does for a connection accepted before a cut whose backend
	// dial finished after it.
	_, gen := p.refusing()
	p.cut(0)
	a, b := net.Pipe()
	if p.track(a, b, gen) {
		t.Fatal("a connection of an earlier cut generation was tracked")
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Error("its ends were left open")
	}
}

func TestProxyLatency(t *testing.T) {
	t.Parallel()
	p, err := newProxy(echoBackend(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c := dialProxy(t, p)
	p.setLatency(100 * time.Millisecond)
	began := time.Now()
	if err := roundTrip(c); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 200*time.Millisecond {
		t.Errorf("round trip took %s with 100ms each way", took)
	}
	p.heal()
	if d := p.latency.Load(); d != 0 {
		t.Errorf("latency after heal = %d", d)
	}
}

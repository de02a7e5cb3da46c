package bench

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestProgressLines(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, 20000, time.Millisecond, false)
	start := time.Unix(1000, 0)
	for ms := 0; ms <= 12000; ms += 10 {
		p.Update(uint64(ms), start.Add(time.Duration(ms)*time.Millisecond))
	}
	p.Done()
	want := "bench: 5000 of 20000 cycles (25 %), 15s left\nbench: 10000 of 20000 cycles (50 %), 10s left\n"
	if b.String() != want {
		t.Errorf("lines:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, 1000, time.Millisecond, true)
	start := time.Unix(1000, 0)
	for ms := 0; ms <= 1000; ms += 10 {
		p.Update(uint64(ms), start.Add(time.Duration(ms)*time.Millisecond))
	}
	out := b.String()
	if n := strings.Count(out, "\r\x1b[K"); n != 11 {
		t.Errorf("%d redraws in 1 s, want 11 (one at once, then every %v)", n, TerminalRedraw)
	}
	if !strings.Contains(out, "[###############---------------]  50.0 %  500/1000 cycles  500ms left") {
		t.Errorf("no half-way bar in %q", out)
	}
	if strings.Contains(out, "\n") {
		t.Error("the bar writes newlines")
	}
	b.Reset()
	p.Done()
	if b.String() != "\r\x1b[K" {
		t.Errorf("Done writes %q, want the line cleared", b.String())
	}
}

func TestIsTerminal(t *testing.T) {
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is a terminal")
	}
}

package mqtt

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
)

// The child of TestWALSurvivesKill: a publisher of the reference bus at
// 100 Hz per device to ECAGENT_WAL_BROKER with the write-ahead log
// ECAGENT_WAL_FILE and the bound ECAGENT_WAL_BOUND. It prints its
// counters every 20 ms, and on a line on stdin (or its end) closes and
// prints them a last time.
func TestWALCrashChild(t *testing.T) {
	if os.Getenv("ECAGENT_WAL_CHILD") == "" {
		t.Skip("the child process of TestWALSurvivesKill")
	}
	bound, _ := strconv.Atoi(os.Getenv("ECAGENT_WAL_BOUND"))
	rules := Rules{Interval: 10 * time.Millisecond}
	p, err := New(Config{Broker: os.Getenv("ECAGENT_WAL_BROKER"), ClientID: "wal-child", Scheme: SchemeJSON, QoS: 1,
		Root: "ecagent/plant/wal", Rules: rules, Buffer: bound, BufferFile: os.Getenv("ECAGENT_WAL_FILE"),
		Timeout: time.Second, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	model, _ := NewModel(referenceBus(), rules)
	p.SetBus(model, &fakeImage{img: make([]byte, model.ImageBytes)}, &fakeRing{})
	p.Start()
	report := func(what string) {
		s := p.Stats()
		fmt.Printf("%s connected=%t buffered=%d dropped=%d before=%d corrupt=%d delivered=%d\n",
			what, s.Connected, s.Buffered, s.Dropped, s.DroppedBeforeRestart, s.BufferCorrupt, s.Delivered)
	}
	quit := make(chan struct{})
	go func() { _, _ = bufio.NewReader(os.Stdin).ReadString('\n'); close(quit) }()
	t2 := time.NewTicker(20 * time.Millisecond)
	defer t2.Stop()
	for {
		select {
		case <-quit:
			if err := p.Close(2 * time.Second); err != nil {
				t.Fatal(err)
			}
			report("final")
			return
		case <-t2.C:
			report("stats")
		}
	}
}

// walChild is a running child publisher and its last reported counters.
type walChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan map[string]string
	exit  chan struct{}
}

func startWALChild(t *testing.T, broker, file string, bound int) *walChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALCrashChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), "ECAGENT_WAL_CHILD=1", "ECAGENT_WAL_BROKER="+broker, "ECAGENT_WAL_FILE="+file,
		"ECAGENT_WAL_BOUND="+strconv.Itoa(bound))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &walChild{cmd: cmd, stdin: stdin, lines: make(chan map[string]string, 1<<16), exit: make(chan struct{})}
	go func() {
		defer close(c.exit)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 || (f[0] != "stats" && f[0] != "final") {
				continue
			}
			m := map[string]string{"kind": f[0]}
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				m[k] = v
			}
			c.lines <- m
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-c.exit })
	return c
}

// waitFor returns the first report satisfying ok, within d.
func (c *walChild) waitFor(t *testing.T, what string, d time.Duration, ok func(map[string]string) bool) map[string]string {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case m := <-c.lines:
			if ok(m) {
				return m
			}
		case <-c.exit:
			t.Fatalf("the child exited before %s", what)
		case <-deadline:
			t.Fatalf("the child did not report %s within %v", what, d)
		}
	}
}

func num(m map[string]string, k string) uint64 { n, _ := strconv.ParseUint(m[k], 10, 64); return n }

// TestWALSurvivesKill kills a publisher with SIGKILL in the middle of a
// broker outage (its backlog past its bound), starts another on the same
// buffer file, brings the broker back and counts at a subscriber whose
// session the broker keeps: each run's messages arrive in order, none
// more than once beyond the QoS 1 redelivery of what was in flight, and
// the messages missing are exactly the drops counted (by the new run,
// for the backlog the killed one dropped: the log recorded them).
func TestWALSurvivesKill(t *testing.T) {
	const bound = 400 // about a second of the child's messages
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/wal"
	sub := subscribe(t, broker.URL(), "wal-sub", root+"/#", true)
	file := filepath.Join(t.TempDir(), "outbox.wal")

	a := startWALChild(t, broker.URL(), file, bound)
	a.waitFor(t, "a connection", 10*time.Second, func(m map[string]string) bool { return m["connected"] == "true" && num(m, "delivered") > 50 })
	broker.Stop()
	last := a.waitFor(t, "a backlog past its bound", 20*time.Second, func(m map[string]string) bool {
		return m["connected"] == "false" && num(m, "dropped") > bound/2
	})
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.exit
	killed := time.Now()
	t.Logf("killed the first publisher with %s messages buffered, %s dropped", last["buffered"], last["dropped"])

	b := startWALChild(t, broker.URL(), file, bound)
	first := b.waitFor(t, "a report", 10*time.Second, func(map[string]string) bool { return true })
	broker.Start()
	b.waitFor(t, "its backlog delivered", 30*time.Second, func(m map[string]string) bool {
		return m["connected"] == "true" && m["buffered"] == "0"
	})
	fmt.Fprintln(b.stdin)
	final := b.waitFor(t, "its final counters", 10*time.Second, func(m map[string]string) bool { return m["kind"] == "final" })
	// Everything the broker acknowledged reaches the subscriber before a
	// message published after it.
	end := subscribe(t, broker.URL(), "wal-end", "nothing/here", false)
	if tok := end.c.Publish(root+"/end", 1, false, "end"); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	sub.waitFor(t, "/end", 10*time.Second, nil)

	type key struct {
		run   int
		topic string
	}
	seen := map[key]map[uint64]bool{}
	lastSeq := map[key]uint64{}
	var messages, duplicates, missing, outOfOrder int
	for _, m := range sub.all() {
		if !strings.Contains(m.topic, "/pd/") && !strings.HasSuffix(m.topic, "/events") {
			continue
		}
		var pd jsonPD
		if err := json.Unmarshal(m.payload, &pd); err != nil {
			t.Fatalf("%s: %s: %v", m.topic, m.payload, err)
		}
		k := key{run: 1, topic: m.topic}
		if pd.TS >= killed.UnixMilli() {
			k.run = 2
		}
		messages++
		if seen[k] == nil {
			seen[k] = map[uint64]bool{}
		}
		if seen[k][pd.Seq] {
			duplicates++
			continue
		}
		seen[k][pd.Seq] = true
		if pd.Seq <= lastSeq[k] {
			outOfOrder++
			continue
		}
		missing += int(pd.Seq - lastSeq[k] - 1)
		lastSeq[k] = pd.Seq
	}
	counted := num(final, "dropped") + num(final, "before")
	t.Logf("replayed at restart: %s buffered, %s dropped before; subscriber got %d messages, %d duplicates, %d out of order, %d missing; counted drops %d (%s by the new run, %s recorded from the killed one); corrupt records %s",
		first["buffered"], first["before"], messages, duplicates, outOfOrder, missing, counted, final["dropped"], final["before"], final["corrupt"])
	if num(final, "before") == 0 {
		t.Error("the drops of the killed run were not carried over")
	}
	// Every message that did not arrive is counted as dropped. A message
	// in flight when the publisher was killed may have reached the broker
	// although its acknowledgement did not come back: it is kept, sent
	// again (a QoS 1 duplicate), and, if the new run then drops it for
	// room, counted as dropped though the subscriber has it. So the count
	// may exceed what is missing by at most what was in flight.
	if extra := int64(counted) - int64(missing); extra < 0 || extra > int64(maxInflight) {
		t.Errorf("%d messages missing, %d drops counted: want the count to be the missing plus at most the %d in flight", missing, counted, maxInflight)
	}
	if outOfOrder != 0 {
		t.Errorf("%d messages out of order", outOfOrder)
	}
	if duplicates > 2*maxInflight {
		t.Errorf("%d duplicates: more than what was in flight was sent twice", duplicates)
	}
	if num(first, "buffered") < bound {
		t.Errorf("the new run replayed %s messages, want the bound %d", first["buffered"], bound)
	}
}

package mqtttest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ErrTahuUnavailable is wrapped by StartTahu's error when node or the
// sparkplug-payload package is not installed.
var ErrTahuUnavailable = errors.New("the Sparkplug decoder of Eclipse Tahu is not available")

// TahuMetric is a metric as Eclipse Tahu's JavaScript decoder
// (sparkplug-payload's decodePayload) reads it. Pointers are nil when
// Tahu's object lacks the field.
type TahuMetric struct {
	Name      *string
	Alias     *uint64
	Timestamp *uint64
	// Type is Tahu's name of the datatype ("Int64", "Double", ...), ""
	// when Tahu has no name for it (no datatype, or an unknown one).
	Type string
	// DataType is the datatype number on the wire, nil when absent.
	DataType *uint32
	// ValueField is the protobuf field of the value oneof that was set
	// ("intValue", "longValue", "doubleValue", ...), "" when none was.
	ValueField string
	// Value is Tahu's value, read from the field Tahu takes for Type: nil
	// for null; int64 for Int8–Int64 (and UInt8–UInt64 values Tahu made
	// negative); uint64 for UInt8–UInt64 and DateTime; float64 for Float
	// and Double (NaN and ±Inf included); bool; string for String, Text
	// and UUID; []byte for Bytes and File; json.RawMessage otherwise.
	Value        any
	IsHistorical *bool
	IsTransient  *bool
	Properties   map[string]TahuPropertyValue
	Metadata     map[string]any
}

// TahuPropertyValue is a PropertySet entry as Tahu decodes it.
type TahuPropertyValue struct {
	Type  string
	Value any // as TahuMetric.Value
}

// TahuPayload is a Sparkplug B payload as Eclipse Tahu decodes it.
type TahuPayload struct {
	Timestamp *uint64
	Seq       *uint64
	UUID      *string
	Body      []byte
	Metrics   []TahuMetric
}

// Tahu is a running Eclipse Tahu decoder: one node process (tahu/decode.js
// beside this file) that a test feeds payloads to.
type Tahu struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	exited chan struct{}
	stderr *bytes.Buffer
	errMu  *sync.Mutex
}

// TahuDir returns the directory holding decode.js, package.json and,
// once `npm ci` ran there, node_modules: $ECAGENT_TAHU_DIR if set, else
// agent/mqtt/mqtttest/tahu in the source tree this package was built from.
func TahuDir() string {
	if d := os.Getenv("ECAGENT_TAHU_DIR"); d != "" {
		return d
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "tahu"
	}
	return filepath.Join(filepath.Dir(file), "tahu")
}

// StartTahu starts Tahu's decoder for t and stops it when t ends. Its
// error wraps ErrTahuUnavailable when node or sparkplug-payload is
// missing; NeedTahu turns that into a skip or, in CI, a failure.
func StartTahu(t testing.TB) (*Tahu, error) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if node, err = exec.LookPath("nodejs"); err != nil {
			return nil, fmt.Errorf("%w: no node in PATH (apt-get install nodejs npm, then npm ci in %s)", ErrTahuUnavailable, TahuDir())
		}
	}
	dir := TahuDir()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "sparkplug-payload", "package.json")); err != nil {
		return nil, fmt.Errorf("%w: sparkplug-payload is not installed in %s (cd %s && npm ci; .ci/run does it)", ErrTahuUnavailable, dir, dir)
	}
	cmd := exec.Command(node, filepath.Join(dir, "decode.js"))
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	h := &Tahu{cmd: cmd, stdin: stdin, lines: make(chan []byte, 1), exited: make(chan struct{}), stderr: new(bytes.Buffer), errMu: new(sync.Mutex)}
	cmd.Stderr = lockedWriter{h.errMu, h.stderr}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting Tahu's decoder: %w", err)
	}
	go func() {
		defer close(h.exited)
		r := bufio.NewReaderSize(stdout, 1<<16)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				h.lines <- line
			}
			if err != nil {
				_ = cmd.Wait()
				return
			}
		}
	}()
	t.Cleanup(h.stop)
	return h, nil
}

// NeedTahu starts Tahu's decoder for t. When node or sparkplug-payload is
// missing it skips t with the reason, or fails t when the CI environment
// variable is true: CI installs them (.ci/run), so there a missing
// decoder is a broken set-up, not a reason to test less.
func NeedTahu(t testing.TB) *Tahu {
	t.Helper()
	h, err := StartTahu(t)
	switch {
	case errors.Is(err, ErrTahuUnavailable) && os.Getenv("CI") == "true":
		t.Fatalf("%v (CI=true: .ci/run must install it)", err)
	case errors.Is(err, ErrTahuUnavailable):
		t.Skip(err.Error())
	case err != nil:
		t.Fatal(err)
	}
	return h
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (h *Tahu) stderrText() string {
	h.errMu.Lock()
	defer h.errMu.Unlock()
	return h.stderr.String()
}

// stop closes the decoder's input and waits for it to exit (it does at
// end of input), killing it if it does not within 5 s.
func (h *Tahu) stop() {
	_ = h.stdin.Close()
	go func() {
		for range h.lines { // drain answers nobody waits for
		}
	}()
	select {
	case <-h.exited:
	case <-time.After(5 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
	}
	close(h.lines)
}

// tahuTimeout bounds one decoding: node answers in well under a
// millisecond; only a stuck process takes this long.
const tahuTimeout = 10 * time.Second

// Decode has Tahu decode payload. An error says Tahu refused the payload
// or the decoder process failed.
func (h *Tahu) Decode(payload []byte) (TahuPayload, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := base64.StdEncoding.EncodeToString(payload) + "\n"
	if _, err := io.WriteString(h.stdin, line); err != nil {
		return TahuPayload{}, fmt.Errorf("tahu: writing to the decoder: %w\n%s", err, h.stderrText())
	}
	var answer []byte
	select {
	case answer = <-h.lines:
	case <-h.exited:
		select {
		case answer = <-h.lines: // its last words
		default:
			return TahuPayload{}, fmt.Errorf("tahu: the decoder exited\n%s", h.stderrText())
		}
	case <-time.After(tahuTimeout):
		return TahuPayload{}, fmt.Errorf("tahu: no answer within %v\n%s", tahuTimeout, h.stderrText())
	}
	var w struct {
		Error   *string     `json:"error"`
		Payload *tahuWirePl `json:"payload"`
	}
	if err := json.Unmarshal(answer, &w); err != nil {
		return TahuPayload{}, fmt.Errorf("tahu: unreadable answer %q: %w", answer, err)
	}
	if w.Error != nil {
		return TahuPayload{}, fmt.Errorf("tahu: %s", *w.Error)
	}
	if w.Payload == nil {
		return TahuPayload{}, fmt.Errorf("tahu: answer without payload: %s", answer)
	}
	return w.Payload.convert()
}

type tahuWirePl struct {
	Timestamp json.RawMessage  `json:"timestamp"`
	Seq       json.RawMessage  `json:"seq"`
	UUID      *string          `json:"uuid"`
	Body      *string          `json:"body"`
	Metrics   []tahuWireMetric `json:"metrics"`
}

type tahuWireMetric struct {
	Name         *string         `json:"name"`
	Alias        json.RawMessage `json:"alias"`
	Timestamp    json.RawMessage `json:"timestamp"`
	Type         *string         `json:"type"`
	DataType     *uint32         `json:"datatype"`
	ValueField   *string         `json:"valueField"`
	Value        json.RawMessage `json:"value"`
	IsHistorical *bool           `json:"isHistorical"`
	IsTransient  *bool           `json:"isTransient"`
	Properties   map[string]struct {
		Type  *string         `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"properties"`
	Metadata map[string]any `json:"metadata"`
}

func (w *tahuWirePl) convert() (TahuPayload, error) {
	var p TahuPayload
	var err error
	if p.Timestamp, err = tahuUint(w.Timestamp); err != nil {
		return p, fmt.Errorf("tahu: payload timestamp: %w", err)
	}
	if p.Seq, err = tahuUint(w.Seq); err != nil {
		return p, fmt.Errorf("tahu: seq: %w", err)
	}
	p.UUID = w.UUID
	if w.Body != nil {
		if p.Body, err = base64.StdEncoding.DecodeString(*w.Body); err != nil {
			return p, fmt.Errorf("tahu: body: %w", err)
		}
	}
	for i, wm := range w.Metrics {
		m := TahuMetric{Name: wm.Name, DataType: wm.DataType, IsHistorical: wm.IsHistorical, IsTransient: wm.IsTransient, Metadata: wm.Metadata}
		if wm.Type != nil {
			m.Type = *wm.Type
		}
		if wm.ValueField != nil {
			m.ValueField = *wm.ValueField
		}
		if m.Alias, err = tahuUint(wm.Alias); err != nil {
			return p, fmt.Errorf("tahu: metric %d alias: %w", i, err)
		}
		if m.Timestamp, err = tahuUint(wm.Timestamp); err != nil {
			return p, fmt.Errorf("tahu: metric %d timestamp: %w", i, err)
		}
		if m.Value, err = tahuValue(m.Type, wm.Value); err != nil {
			return p, fmt.Errorf("tahu: metric %d (%s) value: %w", i, m.Type, err)
		}
		if len(wm.Properties) > 0 {
			m.Properties = map[string]TahuPropertyValue{}
			for k, pv := range wm.Properties {
				var v TahuPropertyValue
				if pv.Type != nil {
					v.Type = *pv.Type
				}
				if v.Value, err = tahuValue(v.Type, pv.Value); err != nil {
					return p, fmt.Errorf("tahu: metric %d property %s: %w", i, k, err)
				}
				m.Properties[k] = v
			}
		}
		p.Metrics = append(p.Metrics, m)
	}
	return p, nil
}

// tahuUint reads a 64-bit unsigned field: a decimal string (a Long) or a
// JSON number; nil when absent or null.
func tahuUint(raw json.RawMessage) (*uint64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	s := string(raw)
	if s[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// tahuValue converts Tahu's value for a metric or property of Tahu type
// typ (see TahuMetric.Value).
func tahuValue(typ string, raw json.RawMessage) (any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	text := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		text = s
	}
	switch typ {
	case "Int8", "Int16", "Int32", "Int64":
		return strconv.ParseInt(text, 10, 64)
	case "UInt8", "UInt16", "UInt32", "UInt64", "DateTime":
		if u, err := strconv.ParseUint(text, 10, 64); err == nil {
			return u, nil
		}
		return strconv.ParseInt(text, 10, 64)
	case "Float", "Double":
		switch text {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		return strconv.ParseFloat(text, 64)
	case "Boolean":
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, err
	case "String", "Text", "UUID":
		if raw[0] != '"' {
			return nil, fmt.Errorf("not a string: %s", raw)
		}
		return s, nil
	case "Bytes", "File":
		if raw[0] != '"' {
			return nil, fmt.Errorf("not base64: %s", raw)
		}
		return base64.StdEncoding.DecodeString(s)
	}
	return append(json.RawMessage(nil), raw...), nil
}

// Package mqtttest helps tests talk MQTT for real: it runs private
// mosquitto brokers (Debian's mosquitto package) and decodes Sparkplug B
// payloads with the protobuf runtime, independently of package sparkplug.
package mqtttest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// MosquittoOptions configures a test broker.
type MosquittoOptions struct {
	// CAFile, CertFile and KeyFile make the listener TLS; RequireClientCert
	// makes it mutual TLS (clients need a certificate signed by CAFile).
	CAFile, CertFile, KeyFile string
	RequireClientCert         bool
	// Users, when set, turns anonymous access off and admits these users
	// with these passwords.
	Users map[string]string
	// Extra are more lines of mosquitto.conf, for the listener.
	Extra []string
}

// Mosquitto is a mosquitto broker run by a test, on a free loopback port,
// with its own configuration and persistence directory. It keeps
// persistent sessions and their queued messages (QoS 0 ones too) across
// Stop and Start, so a subscriber with a persistent session loses nothing
// while it is down.
type Mosquitto struct {
	t    testing.TB
	Port int
	tls  bool
	dir  string
	conf string
	cmd  *exec.Cmd
	exit chan struct{}
}

// StartMosquitto starts a broker for t and stops it when t ends. It skips
// t when mosquitto is not installed.
func StartMosquitto(t testing.TB, o MosquittoOptions) *Mosquitto {
	t.Helper()
	if _, err := exec.LookPath("mosquitto"); err != nil {
		if _, err := os.Stat("/usr/sbin/mosquitto"); err != nil {
			t.Skip("needs the mosquitto broker (apt-get install mosquitto mosquitto-clients)")
		}
	}
	m := &Mosquitto{t: t, Port: testsupport.FreePort(t), dir: t.TempDir(), tls: o.CAFile != ""}
	var conf strings.Builder
	fmt.Fprintf(&conf, "listener %d 127.0.0.1\n", m.Port)
	fmt.Fprintf(&conf, "persistence true\npersistence_location %s/\nautosave_interval 0\n", m.dir)
	// Persistent sessions queue QoS 0 messages too (Sparkplug's births and
	// data are QoS 0), without limit.
	conf.WriteString("max_queued_messages 0\nmax_queued_bytes 0\nmax_inflight_messages 100\nqueue_qos0_messages true\n")
	conf.WriteString("user root\nlog_type error\nlog_type warning\nlog_type notice\n")
	fmt.Fprintf(&conf, "log_dest file %s/mosquitto.log\n", m.dir)
	if m.tls {
		fmt.Fprintf(&conf, "cafile %s\ncertfile %s\nkeyfile %s\n", o.CAFile, o.CertFile, o.KeyFile)
		if o.RequireClientCert {
			conf.WriteString("require_certificate true\n")
		}
	}
	if len(o.Users) > 0 {
		pw := filepath.Join(m.dir, "passwords")
		for user, pass := range o.Users {
			args := []string{"-b", pw, user, pass}
			if _, err := os.Stat(pw); err != nil {
				args = append([]string{"-c"}, args...)
			}
			if out, err := exec.Command("mosquitto_passwd", args...).CombinedOutput(); err != nil {
				t.Fatalf("mosquitto_passwd: %v\n%s", err, out)
			}
		}
		fmt.Fprintf(&conf, "allow_anonymous false\npassword_file %s\n", pw)
	} else {
		conf.WriteString("allow_anonymous true\n")
	}
	for _, line := range o.Extra {
		conf.WriteString(line + "\n")
	}
	m.conf = filepath.Join(m.dir, "mosquitto.conf")
	if err := os.WriteFile(m.conf, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	return m
}

// URL returns the broker's URL for paho: tcp:// or ssl://127.0.0.1:port.
func (m *Mosquitto) URL() string {
	if m.tls {
		return fmt.Sprintf("ssl://127.0.0.1:%d", m.Port)
	}
	return fmt.Sprintf("tcp://127.0.0.1:%d", m.Port)
}

// Addr returns host:port.
func (m *Mosquitto) Addr() string { return fmt.Sprintf("127.0.0.1:%d", m.Port) }

// Start (re)starts the broker and waits until it accepts connections.
func (m *Mosquitto) Start() {
	m.t.Helper()
	if m.cmd != nil {
		m.t.Fatal("mosquitto already runs")
	}
	bin := "mosquitto"
	if _, err := exec.LookPath(bin); err != nil {
		bin = "/usr/sbin/mosquitto"
	}
	cmd := exec.Command(bin, "-c", m.conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("starting mosquitto: %v", err)
	}
	m.cmd, m.exit = cmd, make(chan struct{})
	go func(exit chan struct{}) { _ = cmd.Wait(); close(exit) }(m.exit)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", m.Addr(), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-m.exit:
			m.cmd = nil
			m.t.Fatalf("mosquitto exited at start:\n%s", m.Log())
		default:
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("mosquitto does not listen on %s: %v\n%s", m.Addr(), err, m.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the broker gracefully (SIGTERM: it saves its persistence
// file) and waits for it. Stopping a stopped broker does nothing.
func (m *Mosquitto) Stop() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exit:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exit
	}
	m.cmd = nil
}

// Log returns the broker's log so far.
func (m *Mosquitto) Log() string {
	b, _ := os.ReadFile(filepath.Join(m.dir, "mosquitto.log"))
	return string(b)
}

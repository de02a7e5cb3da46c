package metrics

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// slowClients opens n connections to addr that send payload a byte at a
// time, one byte per connection every interval, until the test ends; it
// returns once all n are connected, with a channel that receives once for
// each connection the server closes.
func slowClients(t *testing.T, addr string, n int, interval time.Duration, payload string) <-chan struct{} {
	t.Helper()
	closed := make(chan struct{}, n)
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("slow client %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		go func() {
			// The server sends nothing before the headers are complete:
			// a read returns when the server closes the connection.
			_, _ = io.Copy(io.Discard, c)
			closed <- struct{}{}
		}()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 0; ; i = (i + 1) % len(payload) {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for _, c := range conns {
				_ = c.SetWriteDeadline(time.Now().Add(time.Millisecond))
				_, _ = c.Write([]byte{payload[i]})
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return closed
}

// TestServerAnswersUnderSlowClients holds 500 connections that send their
// headers (or TLS handshake) a byte at a time (slowloris), over plain HTTP
// and over TLS with basic auth, and checks that the server keeps at most
// MaxConnections of them open — well before ReadHeaderTimeout closes them
// — and that a real scrape and the probes still answer within a deadline.
func TestServerAnswersUnderSlowClients(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tls     bool
		payload string
	}{
		{"plain", false, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200)},
		// A TLS record header announcing a 16 KiB handshake, then its bytes.
		{"tls", true, "\x16\x03\x01\x40\x00\x01\x00\x3f\xfc" + strings.Repeat("\x03", 200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const slow = 500
			config, client := "", &http.Client{Timeout: 3 * time.Second}
			if tc.tls {
				config, client = webConfigTLSAuth(t)
				client.Timeout = 3 * time.Second
			}
			s := startServer(t, config)
			closed := slowClients(t, s.srv.Addr().String(), slow, 50*time.Millisecond, tc.payload)
			deadline := time.After(ReadHeaderTimeout / 2)
			for n := 0; n < slow-MaxConnections; n++ {
				select {
				case <-closed:
				case <-deadline:
					t.Fatalf("the server holds %d of %d slow connections after %v, want at most %d",
						slow-n, slow, ReadHeaderTimeout/2, MaxConnections)
				}
			}
			start := time.Now()
			for _, path := range []string{"/metrics", "/healthz"} {
				req, err := http.NewRequest(http.MethodGet, s.base+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.SetBasicAuth("prometheus", "s3cret")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("GET %s beside %d slow clients: %v", path, slow, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || (path == "/metrics" && !strings.Contains(string(body), nameCycles)) {
					t.Errorf("GET %s beside %d slow clients: %s", path, slow, resp.Status)
				}
			}
			t.Logf("%d of %d slow connections closed; scraped in %v", slow-MaxConnections+len(closed), slow, time.Since(start).Round(time.Millisecond))
		})
	}
}

// webConfigTLSAuth writes a web configuration with TLS and the basic auth
// user prometheus:s3cret, and returns it with a client trusting its
// certificate.
func webConfigTLSAuth(t *testing.T) (string, *http.Client) {
	t.Helper()
	dir := t.TempDir()
	certPEM := writeSelfSignedCert(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "web.yml")
	yml := "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prometheus: " + string(hash) + "\n"
	if err := os.WriteFile(config, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return config, &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// TestServerProbesWithoutCredentials serves with TLS and basic auth:
// /healthz and /readyz answer without credentials, as a Kubernetes probe
// asks (scheme HTTPS, no headers), and say nothing but the state; /metrics
// and the rest still need them.
func TestServerProbesWithoutCredentials(t *testing.T) {
	config, client := webConfigTLSAuth(t)
	s := startServer(t, config)

	for _, c := range []struct {
		path   string
		status int
		body   string
	}{
		{"/healthz", http.StatusOK, "ok\n"},
		{"/readyz", http.StatusServiceUnavailable, "not ready\n"}, // no reason: that needs credentials
		{"/metrics", http.StatusUnauthorized, ""},
		{"/", http.StatusUnauthorized, ""},
		{"/healthz/", http.StatusUnauthorized, ""},
		{"//healthz", http.StatusUnauthorized, ""},
		{"/readyz/../metrics", http.StatusUnauthorized, ""},
	} {
		req, err := http.NewRequest(http.MethodGet, s.base+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = c.path // sent as written, not cleaned by the client
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", c.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || (c.body != "" && string(body) != c.body) {
			t.Errorf("GET %s without credentials: %s %q, want %d %q", c.path, resp.Status, body, c.status, c.body)
		}
	}
	var ok error
	s.ready.Store(&ok)
	resp, body := get(t, client, s.base+"/readyz", nil)
	if resp.StatusCode != http.StatusOK || string(body) != "ready\n" {
		t.Errorf("GET /readyz when ready: %s %q", resp.Status, body)
	}
}

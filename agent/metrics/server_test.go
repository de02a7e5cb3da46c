package metrics

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/internal/testsupport/leakcheck"
)

// runningServer is a Server serving a populated registry in the
// background; the test's cleanup stops it and checks Run's result.
type runningServer struct {
	srv   *Server
	base  string
	ready *atomic.Pointer[error]
}

// startServer populates a registry whose /proc tree has advanced since it
// was built (so the busy ratios exist) and serves it on 127.0.0.1:0.
func startServer(t *testing.T, webConfig string) *runningServer {
	t.Helper()
	p := newFakeProc(t)
	p.setStat(100, 900, 50, 450)
	opts := testOptions()
	opts.ProcRoot = p.root
	r := newTestRegistry(t, opts)
	p.setStat(300, 1700, 200, 800)
	populate(t, r)

	ready := new(atomic.Pointer[error])
	notReady := errors.New("bus in SAFEOP, want OP")
	ready.Store(&notReady)
	srv, err := NewServer(r, ServerOptions{
		Listen:        "127.0.0.1:0",
		WebConfigFile: webConfig,
		Version:       "v1.2.3",
		Ready:         func() error { return *ready.Load() },
	})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(ShutdownTimeout + time.Second):
			t.Errorf("Run did not return after its context ended")
		}
	})
	scheme := "http"
	if webConfig != "" {
		scheme = "https"
	}
	return &runningServer{srv: srv, base: scheme + "://" + srv.Addr().String(), ready: ready}
}

func get(t *testing.T, client *http.Client, url string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp, body
}

// TestServerScrape scrapes a running server, parses the exposition with
// the Prometheus text parser and checks that every documented series is
// there with its type and help; then the other formats and paths.
func TestServerScrape(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t, "")
	client := &http.Client{Timeout: 5 * time.Second}

	resp, body := get(t, client, s.base+"/metrics", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	for _, want := range Documented() {
		mf, ok := families[want.Name]
		if !ok {
			t.Errorf("%s missing from the scrape", want.Name)
			continue
		}
		if got := strings.ToLower(mf.GetType().String()); got != string(want.Type) {
			t.Errorf("%s: type %s, want %s", want.Name, got, want.Type)
		}
		if mf.GetHelp() != want.Help {
			t.Errorf("%s: help %q, want %q", want.Name, mf.GetHelp(), want.Help)
		}
		for _, m := range mf.GetMetric() {
			for _, l := range append(FleetLabels(), want.Labels...) {
				if labelValue(m, l) == "" && !optionalBuildLabel(want.Name, l) {
					t.Errorf("%s: a series lacks label %s", want.Name, l)
				}
			}
		}
	}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			for _, l := range FleetLabels() {
				if labelValue(m, l) == "" {
					t.Errorf("%s: a series lacks fleet label %s", name, l)
				}
			}
		}
	}
	for _, std := range []string{"go_goroutines", "process_resident_memory_bytes", "promhttp_metric_handler_errors_total"} {
		if _, ok := families[std]; !ok {
			t.Errorf("%s missing: the agent process's own collectors are not registered", std)
		}
	}

	// Protobuf (what Prometheus asks for with native histograms on)
	// carries the native buckets.
	resp, body = get(t, client, s.base+"/metrics", http.Header{"Accept": {string(expfmt.NewFormat(expfmt.TypeProtoDelim))}})
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.ResponseFormat(resp.Header))
	native := 0
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("decoding protobuf: %v", err)
			}
			break
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM && strings.HasPrefix(mf.GetName(), "ecagent_") {
			if h := mf.GetMetric()[0].GetHistogram(); h.Schema != nil && h.GetSchema() == 3 {
				native++
			}
		}
	}
	if native != int(cyclestats.NumQuantities) {
		t.Errorf("%d ecagent histograms with native buckets (schema 3) in the protobuf scrape, want %d", native, cyclestats.NumQuantities)
	}

	// OpenMetrics on request.
	resp, body = get(t, client, s.base+"/metrics", http.Header{"Accept": {"application/openmetrics-text;version=1.0.0"}})
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") || !bytes.HasSuffix(body, []byte("# EOF\n")) {
		t.Errorf("OpenMetrics scrape: Content-Type %q, ends %q", ct, body[max(0, len(body)-10):])
	}

	// Health, readiness and the landing page.
	tests := []struct {
		path     string
		ready    error
		status   int
		contains string
	}{
		{"/healthz", nil, http.StatusOK, "ok"},
		{"/readyz", errors.New("bus in SAFEOP, want OP"), http.StatusServiceUnavailable, "bus in SAFEOP, want OP"},
		{"/readyz", nil, http.StatusOK, "ready"},
		{"/", nil, http.StatusOK, "/metrics"},
		{"/nothing", nil, http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		s.ready.Store(&tt.ready)
		resp, body := get(t, client, s.base+tt.path, nil)
		if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.contains) {
			t.Errorf("GET %s (ready: %v): %d %q, want %d containing %q", tt.path, tt.ready, resp.StatusCode, body, tt.status, tt.contains)
		}
	}
}

// optionalBuildLabel reports whether a label of ecagent_build_info may be
// empty: the branch and build tags are only known when the linker sets
// them.
func optionalBuildLabel(family, label string) bool {
	return family == nameBuildInfo && (label == "branch" || label == "tags")
}

// TestPromtoolCheckMetrics runs `promtool check metrics` on a scrape.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install prometheus)")
	}
	s := startServer(t, "")
	_, body := get(t, &http.Client{Timeout: 5 * time.Second}, s.base+"/metrics", nil)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestServerWebConfig serves with TLS and basic auth from an
// exporter-toolkit web configuration, as node_exporter does.
func TestServerWebConfig(t *testing.T) {
	config, client := webConfigTLSAuth(t)
	s := startServer(t, config)
	tests := []struct {
		name       string
		user, pass string
		status     int
	}{
		{"no credentials", "", "", http.StatusUnauthorized},
		{"wrong password", "prometheus", "guess", http.StatusUnauthorized},
		{"unknown user", "grafana", "s3cret", http.StatusUnauthorized},
		{"right credentials", "prometheus", "s3cret", http.StatusOK},
	}
	for _, tt := range tests {
		for _, path := range []string{"/metrics", "/"} { // the probes need none: TestServerProbesWithoutCredentials
			req, err := http.NewRequest(http.MethodGet, s.base+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.user != "" {
				req.SetBasicAuth(tt.user, tt.pass)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tt.name, path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("%s %s: %s, want %d", tt.name, path, resp.Status, tt.status)
			}
			if tt.status == http.StatusOK && path == "/metrics" && !bytes.Contains(body, []byte(nameCycles)) {
				t.Errorf("%s: the scrape lacks %s", tt.name, nameCycles)
			}
		}
	}

	// Plain HTTP to the TLS port is refused.
	resp, _ := get(t, &http.Client{Timeout: 5 * time.Second}, "http://"+s.srv.Addr().String()+"/metrics", nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS listener: %s, want 400", resp.Status)
	}
}

// writeSelfSignedCert writes cert.pem and key.pem for 127.0.0.1 into dir
// and returns the certificate in PEM.
func writeSelfSignedCert(t *testing.T, dir string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ecagent test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certPEM
}

// TestNewServerErrors checks that a bad web configuration or address fails
// at start.
func TestNewServerErrors(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	dir := t.TempDir()
	badYAML := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(badYAML, []byte("tls_server_config:\n  cert_file: missing.pem\n  key_file: missing.key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unknownKey := filepath.Join(dir, "unknown.yml")
	if err := os.WriteFile(unknownKey, []byte("no_such_key: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts ServerOptions
	}{
		{"missing web config", ServerOptions{Listen: "127.0.0.1:0", WebConfigFile: filepath.Join(dir, "absent.yml")}},
		{"certificate files missing", ServerOptions{Listen: "127.0.0.1:0", WebConfigFile: badYAML}},
		{"unknown key", ServerOptions{Listen: "127.0.0.1:0", WebConfigFile: unknownKey}},
		{"bad address", ServerOptions{Listen: "127.0.0.1:http-alt-nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := NewServer(r, tt.opts)
			if err == nil {
				srv.Close()
				t.Fatal("NewServer succeeded")
			}
		})
	}
}

// TestServerRunTwice checks Run's guard and Close.
func TestServerRunTwice(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	srv, err := NewServer(r, ServerOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := srv.Run(context.Background()); err == nil {
		t.Error("Run after Close succeeded")
	}
}

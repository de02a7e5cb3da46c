package otlp

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// Protocol is the OTLP transport.
type Protocol string

// The transports, spelled as OTEL_EXPORTER_OTLP_PROTOCOL spells them.
const (
	ProtocolGRPC         Protocol = "grpc"
	ProtocolHTTPProtobuf Protocol = "http/protobuf"
)

// DefaultInterval is the export interval when neither Options.Interval nor
// OTEL_METRIC_EXPORT_INTERVAL sets one: the default metrics window, so
// each export carries a fresh set of window statistics.
const DefaultInterval = 10 * time.Second

// ErrDisabled is returned by New when Options.Enabled is false.
var ErrDisabled = errors.New("otlp: no endpoint configured (otlp.endpoint or OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT) or disabled by OTEL_SDK_DISABLED / OTEL_METRICS_EXPORTER")

// ErrInvalidOptions is wrapped by New's errors about Options.
var ErrInvalidOptions = errors.New("otlp: invalid options")

// Options configures an Exporter. Zero values defer to the standard
// OTEL_* environment variables (see the package documentation).
type Options struct {
	// Endpoint is the collector's base URL, e.g. http://collector:4318
	// (HTTP) or http://collector:4317 (gRPC); https:// uses TLS. For HTTP
	// the path /v1/metrics is appended unless the URL has a path of its
	// own. Empty uses OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT.
	Endpoint string
	// Protocol is grpc or http/protobuf; empty uses
	// OTEL_EXPORTER_OTLP_[METRICS_]PROTOCOL, else http/protobuf (the
	// OpenTelemetry default).
	Protocol Protocol
	// Interval is the export interval; zero uses
	// OTEL_METRIC_EXPORT_INTERVAL, else DefaultInterval.
	Interval time.Duration
	// Timeout bounds one export; zero uses OTEL_EXPORTER_OTLP_TIMEOUT,
	// else the exporter's 10 s.
	Timeout time.Duration
	// Headers are sent with every export (authentication tokens, tenant
	// IDs); nil uses OTEL_EXPORTER_OTLP_[METRICS_]HEADERS.
	Headers map[string]string
	// Site, Line and Host are the fleet labels, exported as resource
	// attributes; they must not be empty.
	Site, Line, Host string
	// Version is the agent's version (service.version).
	Version string
	// Target is the cycle period; it must be positive.
	Target time.Duration
}

// Enabled reports whether the options (or the environment) name an
// endpoint and the environment does not disable the SDK or the metrics
// exporter.
func (o Options) Enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") ||
		strings.EqualFold(os.Getenv("OTEL_METRICS_EXPORTER"), "none") {
		return false
	}
	return o.Endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// protocol resolves the transport.
func (o Options) protocol() (Protocol, error) {
	p, source := o.Protocol, "protocol"
	for _, env := range []string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p == "" {
			p, source = Protocol(os.Getenv(env)), env
		}
	}
	switch p {
	case "":
		return ProtocolHTTPProtobuf, nil
	case ProtocolGRPC, ProtocolHTTPProtobuf:
		return p, nil
	}
	return "", fmt.Errorf("otlp: %s %q, want grpc or http/protobuf: %w", source, p, ErrInvalidOptions)
}

// endpointURL validates Options.Endpoint and, for HTTP, adds the metrics
// path to a URL that has none.
func (o Options) endpointURL(p Protocol) (string, error) {
	if o.Endpoint == "" {
		return "", nil
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("otlp: endpoint %q, want a URL such as http://collector:4318: %w", o.Endpoint, ErrInvalidOptions)
	}
	if p == ProtocolHTTPProtobuf && (u.Path == "" || u.Path == "/") {
		u.Path = "/v1/metrics"
	}
	return u.String(), nil
}

func (o Options) validate() error {
	for _, l := range []struct{ name, value string }{{"site", o.Site}, {"line", o.Line}, {"host", o.Host}} {
		if l.value == "" {
			return fmt.Errorf("otlp: fleet label %s is empty: %w", l.name, ErrInvalidOptions)
		}
	}
	if o.Target <= 0 {
		return fmt.Errorf("otlp: target cycle period %v, want > 0: %w", o.Target, ErrInvalidOptions)
	}
	if o.Interval < 0 || o.Timeout < 0 {
		return fmt.Errorf("otlp: interval %v, timeout %v, want ≥ 0: %w", o.Interval, o.Timeout, ErrInvalidOptions)
	}
	return nil
}

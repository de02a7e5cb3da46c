package otlp

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint string
		env      map[string]string
		want     bool
	}{
		{name: "nothing configured"},
		{name: "endpoint option", endpoint: "http://collector:4318", want: true},
		{name: "OTEL_EXPORTER_OTLP_ENDPOINT", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: true},
		{name: "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4318/v1/metrics"}, want: true},
		{name: "OTEL_SDK_DISABLED", endpoint: "http://c:4318", env: map[string]string{"OTEL_SDK_DISABLED": "true"}},
		{name: "OTEL_METRICS_EXPORTER=none", endpoint: "http://c:4318", env: map[string]string{"OTEL_METRICS_EXPORTER": "none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTELEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o := testOptions(tc.endpoint, "")
			if got := o.Enabled(); got != tc.want {
				t.Errorf("Enabled() = %v, want %v", got, tc.want)
			}
			if !tc.want {
				if _, err := New(context.Background(), o); !errors.Is(err, ErrDisabled) {
					t.Errorf("New: %v, want ErrDisabled", err)
				}
			}
		})
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		env    map[string]string
	}{
		{name: "protocol", change: func(o *Options) { o.Protocol = "http/json" }},
		{name: "protocol from the environment", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"}},
		{name: "endpoint without a scheme", change: func(o *Options) { o.Endpoint = "collector:4318" }},
		{name: "endpoint with another scheme", change: func(o *Options) { o.Endpoint = "grpc://collector:4317" }},
		{name: "empty site", change: func(o *Options) { o.Site = "" }},
		{name: "no target", change: func(o *Options) { o.Target = 0 }},
		{name: "negative interval", change: func(o *Options) { o.Interval = -time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTELEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o := testOptions("http://127.0.0.1:1", "")
			if tc.change != nil {
				tc.change(&o)
			}
			if _, err := New(context.Background(), o); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("New: %v, want ErrInvalidOptions", err)
			}
		})
	}
}

func TestEndpointURL(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		p        Protocol
		want     string
	}{
		{"http://collector:4318", ProtocolHTTPProtobuf, "http://collector:4318/v1/metrics"},
		{"https://collector:4318/", ProtocolHTTPProtobuf, "https://collector:4318/v1/metrics"},
		{"https://gw.example/otlp/v1/metrics", ProtocolHTTPProtobuf, "https://gw.example/otlp/v1/metrics"},
		{"http://collector:4317", ProtocolGRPC, "http://collector:4317"},
		{"", ProtocolGRPC, ""},
	} {
		got, err := Options{Endpoint: tc.endpoint}.endpointURL(tc.p)
		if err != nil || got != tc.want {
			t.Errorf("endpointURL(%q, %s) = %q, %v; want %q", tc.endpoint, tc.p, got, err, tc.want)
		}
	}
}

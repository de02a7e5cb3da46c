// Package otlptest is an OTLP metrics receiver for tests: a real OTLP/HTTP
// (protobuf) or OTLP/gRPC endpoint built from the OTLP protobuf
// definitions, which keeps every export it receives for the test to
// inspect. It is what an OpenTelemetry Collector's OTLP receiver is, minus
// the pipeline.
package otlptest

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// Export is one export request the receiver accepted.
type Export struct {
	// Request is the decoded ExportMetricsServiceRequest.
	Request *colmetricspb.ExportMetricsServiceRequest
	// Headers are the request's HTTP headers or gRPC metadata, keys in
	// lower case.
	Headers map[string][]string
}

// Receiver accepts OTLP metrics exports until Close.
type Receiver struct {
	url   string
	close func()

	mu      sync.Mutex
	exports []Export
	arrived chan struct{} // closed and replaced on every export
}

func newReceiver() *Receiver { return &Receiver{arrived: make(chan struct{})} }

// NewHTTP starts an OTLP/HTTP receiver (protobuf, gzip or not) on a
// loopback port, serving POST /v1/metrics.
func NewHTTP() (*Receiver, error) {
	r := newReceiver()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("otlptest: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/metrics", r.serveHTTP)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	r.url = "http://" + l.Addr().String()
	r.close = func() { _ = srv.Close() }
	return r, nil
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "content type "+ct+", want application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	body := io.Reader(req.Body)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg colmetricspb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	headers := map[string][]string{}
	for k, v := range req.Header {
		headers[strings.ToLower(k)] = v // as gRPC metadata keys are
	}
	r.add(Export{Request: &msg, Headers: headers})
	out, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// NewGRPC starts an OTLP/gRPC receiver (plain text) on a loopback port.
func NewGRPC() (*Receiver, error) {
	r := newReceiver()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("otlptest: %w", err)
	}
	srv := grpc.NewServer()
	colmetricspb.RegisterMetricsServiceServer(srv, &grpcService{r: r})
	go func() { _ = srv.Serve(l) }()
	r.url = "http://" + l.Addr().String()
	r.close = srv.Stop
	return r, nil
}

type grpcService struct {
	colmetricspb.UnimplementedMetricsServiceServer
	r *Receiver
}

// Export implements the OTLP metrics service.
func (s *grpcService) Export(ctx context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.r.add(Export{Request: req, Headers: md})
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
}

// URL is the receiver's base URL, http://127.0.0.1:PORT: what
// OTEL_EXPORTER_OTLP_ENDPOINT would be set to.
func (r *Receiver) URL() string { return r.url }

// Close stops the receiver.
func (r *Receiver) Close() { r.close() }

func (r *Receiver) add(e Export) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exports = append(r.exports, e)
	close(r.arrived)
	r.arrived = make(chan struct{})
}

// Exports returns what has arrived so far.
func (r *Receiver) Exports() []Export {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Export(nil), r.exports...)
}

// Wait waits until done returns true for the exports received so far, or
// the timeout passes; it reports whether done became true.
func (r *Receiver) Wait(timeout time.Duration, done func([]Export) bool) bool {
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		exports, arrived := append([]Export(nil), r.exports...), r.arrived
		r.mu.Unlock()
		if done(exports) {
			return true
		}
		select {
		case <-arrived:
		case <-deadline:
			return false
		}
	}
}

// Latest returns the newest data of the named metric among exports, with
// the attributes of the resource it came with; nil if there is none.
func Latest(exports []Export, name string) (*metricspb.Metric, map[string]string) {
	for i := len(exports) - 1; i >= 0; i-- {
		for _, rm := range exports[i].Request.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					if m.GetName() == name {
						return m, Attributes(rm.GetResource().GetAttributes())
					}
				}
			}
		}
	}
	return nil, nil
}

// Attributes flattens OTLP attributes to strings (the values' text).
func Attributes(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_DoubleValue:
			out[kv.GetKey()] = fmt.Sprint(x.DoubleValue)
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = fmt.Sprint(x.BoolValue)
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}

package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

// ShutdownTimeout bounds how long Run waits for scrapes in flight once its
// context is done.
const ShutdownTimeout = 5 * time.Second

// ServerOptions configures a Server.
type ServerOptions struct {
	// Listen is the host:port to listen on (metrics.listen), e.g. ":9781"
	// or "127.0.0.1:0".
	Listen string
	// WebConfigFile is the path of a Prometheus exporter-toolkit web
	// configuration file (metrics.webconfig: TLS, basic auth, rate limit),
	// the file node_exporter takes with --web.config.file; "" serves plain
	// HTTP. The file is read again on every connection, so certificates
	// and users can change without a restart.
	WebConfigFile string
	// Ready reports whether the agent is ready (bus in OP, cycle
	// running): nil for ready, otherwise an error saying why not. nil
	// means always ready.
	Ready func() error
	// Version is shown on the landing page at "/".
	Version string
	// Logger receives the server's messages; nil discards them.
	Logger *slog.Logger
}

// Server serves the registry over HTTP:
//
//	/metrics  the exposition; text, OpenMetrics or protobuf as the scraper
//	          asks (protobuf carries the native histograms)
//	/healthz  200 while the process is up
//	/readyz   200 when ServerOptions.Ready returns nil, 503 with the reason
//	          otherwise
//	/         a landing page linking the above
//
// With a web configuration file, TLS and basic auth apply to every path.
type Server struct {
	listener   net.Listener
	http       *http.Server
	webConfig  string
	logger     *slog.Logger
	runStarted atomic.Bool
}

// NewServer checks the web configuration file and binds the listener, so a
// bad file or a busy port fails at start; Run then serves.
func NewServer(r *Registry, opts ServerOptions) (*Server, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.WebConfigFile != "" {
		if err := web.Validate(opts.WebConfigFile); err != nil {
			return nil, fmt.Errorf("metrics: web configuration %s: %w", opts.WebConfigFile, err)
		}
	}
	mux, err := newMux(r, opts, logger)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("metrics: listening on %q: %w", opts.Listen, err)
	}
	return &Server{
		listener:  l,
		webConfig: opts.WebConfigFile,
		logger:    logger,
		http: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
	}, nil
}

// newMux returns the handler of every path.
func newMux(r *Registry, opts ServerOptions, logger *slog.Logger) (*http.ServeMux, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          r.labelled, // counts errors in promhttp_metric_handler_errors_total
		EnableOpenMetrics: true,
		// Two or three scrapers at most; more means something is wrong.
		MaxRequestsInFlight: 8,
		Timeout:             10 * time.Second,
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	ready := opts.Ready
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready != nil {
			if err := ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "not ready: %v\n", err)
				return
			}
		}
		io.WriteString(w, "ready\n")
	})
	landing, err := web.NewLandingPage(web.LandingConfig{
		Name:        "ecagent",
		Description: "EtherCAT master agent: cycle timing, bus health and host load",
		Version:     opts.Version,
		Profiling:   "false",
		Links: []web.LandingLinks{
			{Address: "/metrics", Text: "Metrics"},
			{Address: "/healthz", Text: "Health", Description: "200 while the agent is up"},
			{Address: "/readyz", Text: "Readiness", Description: "200 when the bus is in OP and the cycle runs"},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("metrics: landing page: %w", err)
	}
	mux.Handle("/", landing)
	return mux, nil
}

// Addr returns the address the server listens on (with the actual port
// when ServerOptions.Listen asked for port 0).
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Run serves until ctx is done, then shuts down gracefully: it stops
// accepting connections and waits up to ShutdownTimeout for requests in
// flight. It returns nil after a graceful shutdown and the error that
// stopped the server otherwise. Run may be called once.
func (s *Server) Run(ctx context.Context) error {
	if s.runStarted.Swap(true) {
		return errors.New("metrics: Server.Run called twice")
	}

	served := make(chan error, 1)
	go func() {
		flags := &web.FlagConfig{WebConfigFile: &s.webConfig}
		served <- web.Serve(s.listener, s.http, flags, s.logger)
	}()
	select {
	case err := <-served:
		return fmt.Errorf("metrics: serving on %s: %w", s.Addr(), err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	err := s.http.Shutdown(shutdown)
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("metrics: serving on %s: %w", s.Addr(), serr)
	}
	if err != nil {
		return fmt.Errorf("metrics: shutting down the server on %s: %w", s.Addr(), err)
	}
	return nil
}

// Close releases the listener of a server whose Run was never called;
// after Close, Run fails. Close does nothing once Run has started.
func (s *Server) Close() error {
	if s.runStarted.Swap(true) {
		return nil
	}
	return s.listener.Close()
}

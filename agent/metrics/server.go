package metrics

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

// ShutdownTimeout bounds how long Run waits for scrapes in flight once its
// context is done.
const ShutdownTimeout = 5 * time.Second

// Bounds on clients. Two or three scrapers and the probes are all a server
// has; the agent shares its memory (and, in a container, its cgroup) with
// the cycle process, so a crowd of connections must not grow it.
const (
	// MaxConnections is the most connections held open at once. Beyond
	// it, the connection that has waited longest for a request's headers
	// (a slow or idle client) is closed to make room; when every one is
	// serving a request, the new connection is closed.
	MaxConnections = 64
	// ReadHeaderTimeout bounds the TLS handshake and a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 16 << 10
)

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
	// Details returns lines /readyz adds after its verdict (behind the
	// web configuration's authentication, never to unauthenticated
	// probes): what runs and what does not, and why ("forensics: off:
	// …"). They do not change the verdict. nil adds none.
	Details func() []string
	// Spikes, when not nil, serves /spikes: the latest explained spikes
	// as JSON (ecagent spikes).
	Spikes http.Handler
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
// With a web configuration file, TLS applies to every path, basic auth to
// every path but /healthz and /readyz: probes (Kubernetes httpGet) carry
// no credentials, so those two answer without and say no more than the
// state (no reason why not ready; /metrics and the log have it).
type Server struct {
	listener   net.Listener
	limiter    *connLimiter
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
	limiter := newConnLimiter(l, MaxConnections, logger)
	s := &Server{
		listener:  limiter,
		limiter:   limiter,
		webConfig: opts.WebConfigFile,
		logger:    logger,
		http: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: ReadHeaderTimeout,
			MaxHeaderBytes:    MaxHeaderBytes,
			// A client that reads its answer slowly holds a connection
			// (and for /metrics a place in MaxRequestsInFlight) no longer.
			WriteTimeout: time.Minute,
			IdleTimeout:  2 * time.Minute,
			ErrorLog:     slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
			ConnState:    limiter.track,
		},
	}
	if opts.WebConfigFile != "" {
		probes := probeMux(opts.Ready, false)
		// web.Serve wraps s.http.Handler in its authentication before it
		// serves, and Serve calls BaseContext once before the first
		// connection: the probes are routed around the authentication
		// there. TestServerProbesWithoutCredentials holds this.
		s.http.BaseContext = func(net.Listener) context.Context {
			if _, done := s.http.Handler.(probeRouter); !done {
				s.http.Handler = probeRouter{probes: probes, rest: s.http.Handler}
			}
			return context.Background()
		}
	}
	return s, nil
}

// probeRouter sends exactly /healthz and /readyz to probes, every other
// path to rest.
type probeRouter struct{ probes, rest http.Handler }

func (p probeRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		p.probes.ServeHTTP(w, r)
		return
	}
	p.rest.ServeHTTP(w, r)
}

// probeMux serves /healthz and /readyz; with reason, /readyz says why it
// is not ready.
func probeMux(ready func() error, reason bool) *http.ServeMux {
	return probeMuxDetails(ready, reason, nil)
}

// probeMuxDetails is probeMux with details: lines /readyz adds after its
// verdict.
func probeMuxDetails(ready func() error, reason bool, details func() []string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready != nil {
			if err := ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				if reason {
					fmt.Fprintf(w, "not ready: %v\n", err)
					writeDetails(w, details)
				} else {
					io.WriteString(w, "not ready\n")
				}
				return
			}
		}
		io.WriteString(w, "ready\n")
		writeDetails(w, details)
	})
	return mux
}

// writeDetails writes the details' lines, if any.
func writeDetails(w io.Writer, details func() []string) {
	if details == nil {
		return
	}
	for _, l := range details() {
		io.WriteString(w, l+"\n")
	}
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
	probes := probeMuxDetails(opts.Ready, true, opts.Details)
	if opts.Spikes != nil {
		mux.Handle("/spikes", opts.Spikes)
	}
	mux.Handle("/healthz", probes)
	mux.Handle("/readyz", probes)
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

// connLimiter is a listener that holds at most max connections open,
// making room for a new one by closing the one that has waited longest
// for a request's headers (http.StateNew or StateIdle: a slow client, an
// idle keep-alive): a crowd of slow clients (slowloris) cannot keep a
// scraper out, nor grow the process without bound. (An HTTP/2 connection,
// which a web configuration may enable, reports no state after StateNew:
// it counts as waiting, and may be closed first when the limit is hit.)
type connLimiter struct {
	net.Listener
	max    int
	logger *slog.Logger

	mu      sync.Mutex
	conns   map[*limitedConn]struct{}
	evicted uint64    // connections closed to make room, in all
	logged  time.Time // when an eviction was last logged
}

// limitedConn is a connection of a connLimiter.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
	// waiting and since (guarded by l.mu): reading a request's headers,
	// since when.
	waiting bool
	since   time.Time
}

// Close closes the connection and frees its place.
func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

func newConnLimiter(l net.Listener, max int, logger *slog.Logger) *connLimiter {
	return &connLimiter{Listener: l, max: max, logger: logger, conns: make(map[*limitedConn]struct{}, max)}
}

// Accept accepts a connection, closing a waiting one (or, if none waits,
// the new one) when max are open.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		now := time.Now()
		lc := &limitedConn{Conn: c, l: l, waiting: true, since: now}
		l.mu.Lock()
		var victim *limitedConn
		if len(l.conns) >= l.max {
			for o := range l.conns {
				if o.waiting && (victim == nil || o.since.Before(victim.since)) {
					victim = o
				}
			}
			l.evicted++
			if now.Sub(l.logged) >= time.Minute {
				l.logged = now
				l.logger.Warn("metrics: too many connections; closing the slowest", "limit", l.max, "closed_in_all", l.evicted)
			}
		}
		if victim != nil {
			delete(l.conns, victim)
		}
		admit := len(l.conns) < l.max
		if admit {
			l.conns[lc] = struct{}{}
		}
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Conn.Close()
		}
		if admit {
			return lc, nil
		}
		_ = c.Close() // every connection is serving a request
	}
}

// track is the http.Server's ConnState hook: it marks which connections
// wait for a request's headers.
func (l *connLimiter) track(c net.Conn, state http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, open := l.conns[lc]; !open {
		return
	}
	switch state {
	case http.StateNew, http.StateIdle:
		lc.waiting, lc.since = true, time.Now()
	case http.StateActive:
		lc.waiting = false
	case http.StateHijacked, http.StateClosed:
		delete(l.conns, lc)
	}
}

package metrics

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/contract"
)

// DefaultWindow is the window CloseWindow is expected to be called at
// when Options.Window is zero.
const DefaultWindow = 10 * time.Second

// Options configures a Registry.
type Options struct {
	// Site, Line and Host are the fleet labels every series carries. They
	// must not be empty.
	Site, Line, Host string
	// Target is the cycle period. It must be positive.
	Target time.Duration
	// Window is how often the agent calls Consumer.CloseWindow; it sizes
	// the windows so that their percentiles are exact. Zero means
	// DefaultWindow.
	Window time.Duration
	// ProcRoot is where procfs is mounted, "" meaning "/proc"; the host
	// and cycle-process CPU figures are read from there.
	ProcRoot string
	// CycleCore is the CPU the cycle thread is pinned to, negative if it
	// is not pinned (then ecagent_cycle_core_busy_ratio is not exported).
	CycleCore int
	// Version and Revision label ecagent_build_info; empty values fall
	// back to what github.com/prometheus/common/version knows (its
	// linker-set variables or the Go build information).
	Version, Revision string
	// Detail chooses how many series a scrape carries (DetailStandard
	// when empty).
	Detail Detail
}

// Detail is how many series a scrape carries: the series budget of a
// fleet (see docs/deployment.md) against the full picture of one host.
type Detail string

const (
	// DetailStandard, the default, keeps a scrape of a healthy segment
	// small: a state set shows its current value only (one series, 1),
	// an error counter (ESC port and processing-unit counters, AL status
	// code, a bring-up failure reason) appears once it is non-zero, a
	// data quality's since-time while the quality is not good, a host check its
	// current status only, and the Go runtime without go_memstats_*. Every query that selects the
	// value it asks about (`{presence="lost"} == 1`, `> 0`, `!= 0`)
	// answers the same as with DetailFull.
	DetailStandard Detail = "standard"
	// DetailFull exports every series of every state set and counter,
	// zeros included.
	DetailFull Detail = "full"
)

// Valid reports whether d is a known detail level ("" is DetailStandard).
func (d Detail) Valid() bool { return d == "" || d == DetailStandard || d == DetailFull }

func (d Detail) full() bool { return d == DetailFull }

// Registry holds every ecagent series on its own prometheus.Registry (no
// global registry): the Consumer's histograms, counters and window
// gauges, the bus, slave and real-time gauges the agent sets, the host CPU
// collector, build information and the Go and process collectors of the
// agent process. Its Set methods are safe for concurrent use.
type Registry struct {
	reg      *prometheus.Registry
	labelled prometheus.Registerer // reg, adding the fleet labels
	consumer *Consumer
	host     *hostCollector

	busSlaves       prometheus.Gauge
	slaves          *slaveStates
	slavePortErrors *prometheus.GaugeVec
	slaveESCErrors  *prometheus.GaugeVec
	processStarts   prometheus.Counter
	busEvents       *prometheus.CounterVec
	eventCounters   map[contract.EventKind]*prometheus.CounterVec // by the kind that counts in it
	rtSetting       *prometheus.GaugeVec
	maintenanceUp   *prometheus.GaugeVec
	rtCheck         *prometheus.GaugeVec
	detail          Detail
	errMu           sync.Mutex
	errShown        map[string]bool // error counters exported since SetSlaves (DetailStandard)
	dc              dcGauges
	devices         *deviceSeries
	spikes          spikeSeriesSet
	// spikesDroppedSeen is the forensics' running total of unexplained
	// spikes last added to ecagent_cycle_spikes_unexplained_total.
	spikesDroppedMu   sync.Mutex
	spikesDroppedSeen uint64
}

// NewRegistry builds the registry and its Consumer. All memory the
// Consumer needs (windows, histograms) is allocated here.
func NewRegistry(opts Options) (*Registry, error) {
	for _, l := range []struct{ name, value string }{{labelSite, opts.Site}, {labelLine, opts.Line}, {labelHost, opts.Host}} {
		if l.value == "" {
			return nil, fmt.Errorf("metrics: fleet label %s is empty: %w", l.name, ErrInvalidOptions)
		}
	}
	if opts.Target <= 0 {
		return nil, fmt.Errorf("metrics: target cycle period %v, want > 0: %w", opts.Target, ErrInvalidOptions)
	}
	if opts.Window < 0 {
		return nil, fmt.Errorf("metrics: window %v, want ≥ 0: %w", opts.Window, ErrInvalidOptions)
	}
	if !opts.Detail.Valid() {
		return nil, fmt.Errorf("metrics: detail %q, want %s or %s: %w", opts.Detail, DetailStandard, DetailFull, ErrInvalidOptions)
	}
	if opts.Window == 0 {
		opts.Window = DefaultWindow
	}
	if opts.ProcRoot == "" {
		opts.ProcRoot = "/proc"
	}

	r := &Registry{reg: prometheus.NewRegistry(), detail: opts.Detail, errShown: map[string]bool{}}
	r.labelled = prometheus.WrapRegistererWith(prometheus.Labels{
		labelSite: opts.Site, labelLine: opts.Line, labelHost: opts.Host,
	}, r.reg)
	b := builder{catalog: Documented(), reg: r.labelled}

	c, err := b.consumer(opts)
	if err != nil {
		return nil, err
	}
	r.consumer = c

	r.busSlaves = b.gauge(nameBusSlaves)
	r.slaves = newSlaveStates(b.catalog, opts.Detail)
	b.register(r.slaves)
	r.slavePortErrors = b.gaugeVec(nameSlavePortErrors, labelPosition, labelName, labelPort, labelCounter)
	r.slaveESCErrors = b.gaugeVec(nameSlaveESCErrors, labelPosition, labelName, labelCounter)
	r.processStarts = b.counter(nameProcessStarts)
	r.busEvents = b.counterVec(nameBusEvents, labelKind, labelPosition, labelName)
	r.eventCounters = b.eventCounters()
	r.rtSetting = b.gaugeVec(nameRTSetting, labelSetting)
	r.maintenanceUp = b.gaugeVec(nameMaintenanceUp, labelSocket)
	r.rtCheck = b.gaugeVec(nameRTCheck, labelCheck, labelStatus)
	r.dc = newDCGauges(&b)
	r.devices = newDeviceSeries(&b)
	r.spikes = newSpikeSeries(&b, opts.Detail)

	r.host = newHostCollector(b.catalog, opts.ProcRoot, opts.CycleCore)
	b.register(r.host)

	extra := prometheus.Labels{}
	if opts.Version != "" {
		extra["version"] = opts.Version
	}
	if opts.Revision != "" {
		extra["revision"] = opts.Revision
	}
	b.register(version.NewCollector("ecagent", version.WithExtraConstLabels(extra)))
	if opts.Detail.full() {
		b.register(collectors.NewGoCollector())
	} else {
		// The Go runtime without its 25 go_memstats_* series: the
		// agent's memory is process_resident_memory_bytes, and the
		// series budget of a fleet has better uses.
		b.register(collectors.NewGoCollector(collectors.WithGoCollectorMemStatsMetricsDisabled()))
	}
	b.register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if b.err != nil {
		return nil, b.err
	}
	return r, nil
}

// CountEvent counts one event of the bus (ecagent_bus_events_total): kind
// is the event's name (contract.EventInfo.Name), position and name the slave
// concerned; a negative position is the bus as a whole (labels position
// "-1", name "bus"). It is safe for concurrent use.
func (r *Registry) CountEvent(kind string, position int, name string) {
	if position < 0 {
		position, name = -1, "bus"
	}
	r.busEvents.WithLabelValues(kind, strconv.Itoa(position), name).Inc()
}

// Gatherer returns the registry to serve (see NewServer) or to test.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Consumer returns the registry's one Consumer, for the goroutine that
// drains the sample ring.
func (r *Registry) Consumer() *Consumer { return r.consumer }

// Slave names one slave of a bus scan for SetSlaves. What the slave is
// (whether it answers, its AL state, the quality of its data) is the bus
// model's to say (SetBusModel).
type Slave struct {
	// Position is the slave's 0-based position on the bus.
	Position int
	// Name is the slave's device name, e.g. "EL2004", the name label of
	// its series; it must be the name the bus model gives it.
	Name string
}

// SetSlaves starts over for the given slaves (after a scan): it sets
// ecagent_bus_slaves to their number and drops the error counters of
// slaves no longer on the bus, and their emergency and drive series;
// ecagent_coe_emergencies_total starts at 0 for every new slave and keeps
// counting for every slave still there.
func (r *Registry) SetSlaves(slaves []Slave) {
	r.slavePortErrors.Reset()
	r.slaveESCErrors.Reset()
	r.errMu.Lock()
	clear(r.errShown)
	r.errMu.Unlock()
	r.devices.setSlaves(slaves)
	r.busSlaves.Set(float64(len(slaves)))
}

// PortErrorCounters are the ESC error counters of one port (registers
// 0x0300 + 2·port, 0x0301 + 2·port, 0x0308 + port and 0x0310 + port).
type PortErrorCounters struct {
	InvalidFrame, RXError, ForwardedRXError, LostLink uint8
}

// ESCErrorCounters are a slave's ESC error counters (0x0300–0x0313).
type ESCErrorCounters struct {
	// Ports holds the counters of ports 0 to 3.
	Ports [4]PortErrorCounters
	// ProcessingUnit (0x030C) and PDI (0x030D) count errors not tied to
	// a port.
	ProcessingUnit, PDI uint8
}

// SetSlaveErrorCounters sets the ESC error counter gauges of one slave.
// With DetailStandard a counter's series appears once it is non-zero and
// stays until the next SetSlaves, so a healthy segment costs no series
// and an erring port keeps its history.
func (r *Registry) SetSlaveErrorCounters(position int, name string, c ESCErrorCounters) {
	pos := strconv.Itoa(position)
	for port, p := range c.Ports {
		portLabel := strconv.Itoa(port)
		r.setErrorCounter(r.slavePortErrors, p.InvalidFrame, pos, name, portLabel, "invalid_frame")
		r.setErrorCounter(r.slavePortErrors, p.RXError, pos, name, portLabel, "rx_error")
		r.setErrorCounter(r.slavePortErrors, p.ForwardedRXError, pos, name, portLabel, "forwarded_rx_error")
		r.setErrorCounter(r.slavePortErrors, p.LostLink, pos, name, portLabel, "lost_link")
	}
	r.setErrorCounter(r.slaveESCErrors, c.ProcessingUnit, pos, name, "processing_unit")
	r.setErrorCounter(r.slaveESCErrors, c.PDI, pos, name, "pdi")
}

// setErrorCounter sets one error counter's series: always with
// DetailFull, else once it is non-zero or its series exists already.
func (r *Registry) setErrorCounter(vec *prometheus.GaugeVec, v uint8, labels ...string) {
	if !r.detail.full() {
		key := strings.Join(labels, "\x00")
		r.errMu.Lock()
		shown := r.errShown[key]
		if v != 0 && !shown {
			r.errShown[key] = true
		}
		r.errMu.Unlock()
		if v == 0 && !shown {
			return
		}
	}
	vec.WithLabelValues(labels...).Set(float64(v))
}

// CycleProcessStarted records that the agent started the cycle process
// with the given PID: ecagent_cycle_process_up becomes 1, the start counter
// goes up and the process's CPU time is read from /proc/PID/stat.
func (r *Registry) CycleProcessStarted(pid int) {
	r.processStarts.Inc()
	r.slaves.processUp.Store(true)
	r.host.setPID(pid)
}

// CycleProcessAttached records that the agent attached to a cycle process
// that was already running (after the agent itself restarted): like
// CycleProcessStarted without counting a start.
func (r *Registry) CycleProcessAttached(pid int) {
	r.slaves.processUp.Store(true)
	r.host.setPID(pid)
}

// CycleProcessResponding records whether the running cycle process still
// runs cycles (its heartbeat beats): one that exists but runs none is not
// up either.
func (r *Registry) CycleProcessResponding(responding bool) {
	r.slaves.processUp.Store(responding)
}

// CycleProcessExited records that the cycle process is gone.
func (r *Registry) CycleProcessExited() {
	r.slaves.processUp.Store(false)
	r.host.setPID(0)
}

// RTSetting names a real-time setting of the cycle process, the setting
// label of ecagent_rt_setting.
type RTSetting string

// The real-time settings the cycle process asks the host for.
const (
	RTSchedFIFO  RTSetting = "sched_fifo"  // SCHED_FIFO priority of the cycle thread
	RTAffinity   RTSetting = "affinity"    // CPU affinity of the cycle thread
	RTMlock      RTSetting = "mlock"       // mlockall of the cycle process
	RTDMALatency RTSetting = "dma_latency" // /dev/cpu_dma_latency held at 0
)

// SetRTSetting records whether the host applied (true) or refused (false)
// a setting the configuration asked for. Settings not asked for are not
// exported.
func (r *Registry) SetRTSetting(setting RTSetting, applied bool) {
	v := 0.0
	if applied {
		v = 1
	}
	r.rtSetting.WithLabelValues(string(setting)).Set(v)
}

// SetMaintenanceSocket records whether the cycle process serves its
// maintenance socket at path (up) or refused to.
func (r *Registry) SetMaintenanceSocket(path string, up bool) {
	r.maintenanceUp.Reset() // one socket: the latest cycle process's
	v := 0.0
	if up {
		v = 1
	}
	r.maintenanceUp.WithLabelValues(path).Set(v)
}

// CheckStatus is the verdict of a host real-time check, the status label
// of ecagent_rt_check. The names match those of package agent/rtcheck, so
// CheckStatus(result.Status.String()) converts one.
type CheckStatus string

// The verdicts.
const (
	CheckPass CheckStatus = "pass"
	CheckWarn CheckStatus = "warn"
	CheckFail CheckStatus = "fail"
	CheckSkip CheckStatus = "skip"
)

// checkStatuses lists the verdicts in the order they are exported.
func checkStatuses() []CheckStatus { return []CheckStatus{CheckPass, CheckWarn, CheckFail, CheckSkip} }

// SetRTCheck records the current status of a host check as a state set:
// ecagent_rt_check{check, status} is 1 for status. With DetailFull the
// other statuses are 0; with DetailStandard they are not exported. Either
// way `ecagent_rt_check{status="fail"} == 1` alerts on a failing check and
// a change of status never leaves a stale series behind.
func (r *Registry) SetRTCheck(check string, status CheckStatus) error {
	if check == "" {
		return fmt.Errorf("metrics: rt check with an empty name: %w", ErrInvalidArgument)
	}
	known := false
	for _, s := range checkStatuses() {
		known = known || s == status
	}
	if !known {
		return fmt.Errorf("metrics: rt check %s: status %q, want pass, warn, fail or skip: %w", check, status, ErrInvalidArgument)
	}
	for _, s := range checkStatuses() {
		switch {
		case s == status:
			r.rtCheck.WithLabelValues(check, string(s)).Set(1)
		case r.detail.full():
			r.rtCheck.WithLabelValues(check, string(s)).Set(0)
		default:
			r.rtCheck.DeleteLabelValues(check, string(s))
		}
	}
	return nil
}

// builder creates the documented collectors and registers them, keeping
// the first error.
type builder struct {
	catalog []Series
	reg     prometheus.Registerer
	err     error
}

func (b *builder) register(c prometheus.Collector) {
	if b.err != nil {
		return
	}
	if err := b.reg.Register(c); err != nil {
		b.err = fmt.Errorf("metrics: registering a collector: %w", err)
	}
}

func (b *builder) gauge(name string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: helpOf(b.catalog, name)})
	b.register(g)
	return g
}

func (b *builder) gaugeVec(name string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: helpOf(b.catalog, name)}, labels)
	b.register(g)
	return g
}

func (b *builder) counter(name string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: helpOf(b.catalog, name)})
	b.register(c)
	return c
}

func (b *builder) counterVec(name string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: helpOf(b.catalog, name)}, labels)
	b.register(c)
	return c
}

func (b *builder) histogram(name string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                            name,
		Help:                            helpOf(b.catalog, name),
		Buckets:                         buckets,
		NativeHistogramBucketFactor:     nativeBucketFactor,
		NativeHistogramMaxBucketNumber:  nativeMaxBuckets,
		NativeHistogramMinResetDuration: nativeMinResetDuration,
	})
	b.register(h)
	return h
}

// consumer builds the Consumer and registers its series.
func (b *builder) consumer(opts Options) (*Consumer, error) {
	windows, err := cyclestats.NewWindows(opts.Target, opts.Window)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	c := &Consumer{windows: windows}
	deriver := windows.Deriver()
	for k := range cyclestats.NumCounters {
		if !k.Segment() {
			c.counters[k] = b.counter(CounterName(k))
			continue
		}
		// The segment holds the segment counters as running totals.
		name := CounterName(k)
		b.register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: helpOf(b.catalog, name)},
			func() float64 { return float64(deriver.SegmentCount(k)) }))
	}
	// ecagent_expected_wkc is collected only once a sample has set it: a
	// gauge has no "unknown" value and 0 would be a wrong one.
	b.register(&optionalGauge{
		desc: prometheus.NewDesc(nameExpectedWKC, helpOf(b.catalog, nameExpectedWKC), nil, nil),
		value: func() (float64, bool) {
			v, ok := deriver.ExpectedWKC()
			return float64(v), ok
		},
	})
	b.gauge(nameTarget).Set(opts.Target.Seconds())

	buckets := [cyclestats.NumQuantities][]float64{
		cyclestats.QuantityPeriod:            periodBuckets(opts.Target),
		cyclestats.QuantityJitter:            timingBuckets(),
		cyclestats.QuantityWakeupLatency:     timingBuckets(),
		cyclestats.QuantityJobDuration:       timingBuckets(),
		cyclestats.QuantityFrameRTT:          timingBuckets(),
		cyclestats.QuantityDCTimeDifference:  dcBuckets(),
		cyclestats.QuantityDCControllerError: dcBuckets(),
		cyclestats.QuantityCPULoad:           loadBuckets(),
	}
	samples := b.gaugeVec(nameWindowSamples, labelQuantity)
	for q := range cyclestats.NumQuantities {
		c.hist[q] = b.histogram(HistogramName(q), buckets[q])
		win := b.gaugeVec(WindowName(q), labelStat)
		for i, stat := range WindowStats() {
			c.winGauges[q][i] = win.WithLabelValues(stat)
			c.winGauges[q][i].Set(math.NaN())
		}
		c.winSamples[q] = samples.WithLabelValues(q.String())
	}
	return c, nil
}

// optionalGauge is a gauge that is collected only while value reports
// one.
type optionalGauge struct {
	desc  *prometheus.Desc
	value func() (float64, bool)
}

// Describe implements prometheus.Collector.
func (g *optionalGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *optionalGauge) Collect(ch chan<- prometheus.Metric) {
	if v, ok := g.value(); ok {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v)
	}
}

package mqtt

import "github.com/prometheus/client_golang/prometheus"

// Metric names of the publisher's series.
const (
	namePublished  = "ecagent_mqtt_messages_published_total"
	nameDelivered  = "ecagent_mqtt_messages_delivered_total"
	nameBuffered   = "ecagent_mqtt_messages_buffered"
	nameDropped    = "ecagent_mqtt_messages_dropped_total"
	nameReconnects = "ecagent_mqtt_reconnects_total"
	nameConnected  = "ecagent_mqtt_connected"
	nameAccepted   = "ecagent_mqtt_writes_accepted_total"
	nameRejected   = "ecagent_mqtt_writes_rejected_total"
	nameTakeovers  = "ecagent_mqtt_session_takeovers_total"
)

// collector exports a publisher's counters; it reads them at scrape time.
type collector struct {
	p                                         *Publisher
	published, delivered, buffered, dropped   *prometheus.Desc
	reconnects, connected, accepted, rejected *prometheus.Desc
	takeovers                                 *prometheus.Desc
}

// Collector returns a Prometheus collector of the publisher's counters:
// messages published, delivered (acknowledged), buffered and dropped,
// reconnects, session takeovers, the connection state, and writes
// accepted and rejected (by reason).
func (p *Publisher) Collector() prometheus.Collector {
	return &collector{
		p:          p,
		published:  prometheus.NewDesc(namePublished, "MQTT messages handed to the client for sending (each attempt).", nil, nil),
		delivered:  prometheus.NewDesc(nameDelivered, "MQTT messages the broker acknowledged (QoS 1, 2) or that were written to the connection (QoS 0).", nil, nil),
		buffered:   prometheus.NewDesc(nameBuffered, "MQTT messages waiting for the broker in the bounded outbox.", nil, nil),
		dropped:    prometheus.NewDesc(nameDropped, "MQTT messages dropped, oldest first, because the outbox was full.", nil, nil),
		reconnects: prometheus.NewDesc(nameReconnects, "Connections to the MQTT broker made after the first one.", nil, nil),
		connected:  prometheus.NewDesc(nameConnected, "1 while the agent is connected to the MQTT broker, else 0.", nil, nil),
		accepted:   prometheus.NewDesc(nameAccepted, "Output writes from MQTT handed to the cycle.", nil, nil),
		rejected:   prometheus.NewDesc(nameRejected, "Output writes from MQTT refused, by reason.", []string{"reason"}, nil),
		takeovers: prometheus.NewDesc(nameTakeovers, "Times the MQTT broker closed the agent's connection within 10 s of making it, 3 or more times in a row: "+
			"another client connecting with the agent's client id takes its session over; each is followed by a back-off (10 s, doubling to 5 min).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.published, c.delivered, c.buffered, c.dropped, c.reconnects, c.connected, c.accepted, c.rejected, c.takeovers} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.published, s.Published)
	counter(c.delivered, s.Delivered)
	counter(c.dropped, s.Dropped)
	counter(c.reconnects, s.Reconnects)
	counter(c.accepted, s.Accepted)
	counter(c.takeovers, s.Takeovers)
	ch <- prometheus.MustNewConstMetric(c.buffered, prometheus.GaugeValue, float64(s.Buffered))
	up := 0.0
	if s.Connected {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, up)
	// Every reason is exported from the start, so rate() sees the first one.
	for _, code := range RejectCodes() {
		counter(c.rejected, s.Rejected[code], string(code))
	}
}

// RejectCodes lists every RejectCode.
func RejectCodes() []RejectCode {
	return []RejectCode{RejectDisabled, RejectUnknown, RejectNotWritable, RejectMalformed, RejectWrongType,
		RejectOutOfRange, RejectCycleDown, RejectQueueFull, RejectCycleRefused, RejectRetained, RejectStale, RejectDuplicate}
}

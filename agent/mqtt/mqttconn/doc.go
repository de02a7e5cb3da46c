// Package mqttconn is a small MQTT 3.1.1 client for one long-lived
// publishing connection: the edge agent's own connection to its broker.
//
// It exists because of a measurement: with the general-purpose Paho
// client, the publisher's whole path of one process-data message made
// about 41 heap allocations (a token, a timer, a control packet, buffer
// growth, a message store entry and a formatted key per publish, and more
// on every acknowledgement). Here a QoS 0 or 1 publication is encoded
// into a buffer that is reused, acknowledgements are tracked in a fixed
// table indexed by packet identifier, and the reader decodes into a
// reused buffer, so that the steady flow allocates nothing.
//
// What it implements: TCP, TLS (crypto/tls) and WebSocket (ws://, wss://,
// subprotocol "mqtt") transports; CONNECT with client identifier, clean
// session, keep-alive, will, user name and password; CONNACK return codes
// as errors (ConnectError); PUBLISH at QoS 0 and 1 with PUBACK tracking
// (Publish returns the packet identifier, Acked reports it acknowledged);
// SUBSCRIBE with SUBACK; inbound PUBLISH at QoS 0 and 1 (answered with
// PUBACK) delivered to a handler with its retain flag; PINGREQ keep-alive;
// DISCONNECT. A connection the broker ends (closing the socket, or with a
// DISCONNECT of its own) ends with an error wrapping ErrClosedByBroker.
//
// What it does not implement: QoS 2 (in either direction: an inbound QoS 2
// publication ends the connection), UNSUBSCRIBE, persistent in-flight
// state across connections (redelivery with DUP is left to the caller,
// which requeues what was not acknowledged), automatic reconnection, and
// MQTT 5.
package mqttconn

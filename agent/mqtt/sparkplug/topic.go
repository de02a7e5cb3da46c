package sparkplug

import "strings"

// Namespace is the first topic level of Sparkplug B.
const Namespace = "spBv1.0"

// MessageType is a Sparkplug message type, the third topic level.
type MessageType string

// The message types of an edge node and its devices.
const (
	NBIRTH MessageType = "NBIRTH"
	NDEATH MessageType = "NDEATH"
	NDATA  MessageType = "NDATA"
	NCMD   MessageType = "NCMD"
	DBIRTH MessageType = "DBIRTH"
	DDEATH MessageType = "DDEATH"
	DDATA  MessageType = "DDATA"
	DCMD   MessageType = "DCMD"
)

// NodeTopic returns spBv1.0/<group>/<typ>/<node>.
func NodeTopic(group string, typ MessageType, node string) string {
	return Namespace + "/" + group + "/" + string(typ) + "/" + node
}

// DeviceTopic returns spBv1.0/<group>/<typ>/<node>/<device>.
func DeviceTopic(group string, typ MessageType, node, device string) string {
	return NodeTopic(group, typ, node) + "/" + device
}

// Topic is a parsed Sparkplug topic.
type Topic struct {
	Group  string
	Type   MessageType
	Node   string
	Device string // "" for node messages
}

// ParseTopic splits a Sparkplug B topic; ok is false for any other topic.
func ParseTopic(s string) (Topic, bool) {
	parts := strings.Split(s, "/")
	if len(parts) < 4 || len(parts) > 5 || parts[0] != Namespace {
		return Topic{}, false
	}
	for _, p := range parts[1:] {
		if p == "" {
			return Topic{}, false
		}
	}
	t := Topic{Group: parts[1], Type: MessageType(parts[2]), Node: parts[3]}
	if len(parts) == 5 {
		t.Device = parts[4]
	}
	return t, true
}

// Metric names an edge node publishes in every NBIRTH (Sparkplug B 3.0).
const (
	// MetricBdSeq is the birth/death sequence number, in NBIRTH and in the
	// NDEATH will of the same connection.
	MetricBdSeq = "bdSeq"
	// MetricRebirth is the node control a host writes true to (NCMD) to
	// ask for new births.
	MetricRebirth = "Node Control/Rebirth"
)

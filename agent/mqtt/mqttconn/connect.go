package mqttconn

import "github.com/ecagent/ecagent/agent/mqtt/mqttconn/packet"

// appendConnect appends a CONNECT packet.
func appendConnect(b []byte, o *Options, keepAliveSec uint16) []byte {
	n := 10 + 2 + len(o.ClientID)
	var flags byte
	if o.CleanSession {
		flags |= 0x02
	}
	if o.Will != nil {
		flags |= 0x04 | o.Will.QoS<<3
		if o.Will.Retain {
			flags |= 0x20
		}
		n += 2 + len(o.Will.Topic) + 2 + len(o.Will.Payload)
	}
	if o.Username != "" {
		flags |= 0x80
		n += 2 + len(o.Username)
		if o.Password != "" {
			flags |= 0x40
			n += 2 + len(o.Password)
		}
	}
	b = append(b, packet.TypeConnect<<4)
	b = packet.AppendRemaining(b, n)
	b = packet.AppendString(b, "MQTT")
	b = append(b, 4, flags)
	b = packet.AppendUint16(b, keepAliveSec)
	b = packet.AppendString(b, o.ClientID)
	if o.Will != nil {
		b = packet.AppendString(b, o.Will.Topic)
		b = packet.AppendBytes(b, o.Will.Payload)
	}
	if o.Username != "" {
		b = packet.AppendString(b, o.Username)
		if o.Password != "" {
			b = packet.AppendString(b, o.Password)
		}
	}
	return b
}

package mqtt

// catalogEntry gives the engineering unit and scale of one kind of PDO
// entry of a known terminal: value = raw × scale.
type catalogEntry struct {
	order  string
	output bool
	index  uint16 // the channel 1 object; channels follow at +0x10
	sub    uint8
	unit   string
	scale  float64
}

// fullScale16 is the raw value of the full-scale voltage of Beckhoff's
// 16-bit analog terminals (0x7FFF).
const fullScale16 = 0x7FFF

// catalog lists the analog terminals whose raw values the publisher turns
// into engineering values without configuration. The scales are those of
// the terminals' documentation: PT100 inputs in 1/10 °C, ±10 V (and
// 0–10 V) channels at 0x7FFF full scale.
func catalog() []catalogEntry {
	return []catalogEntry{
		{order: "EL3204", index: 0x6000, sub: 0x11, unit: "°C", scale: 0.1},
		{order: "EL3004", index: 0x6000, sub: 0x11, unit: "V", scale: 10.0 / fullScale16},
		{order: "EL4132", output: true, index: 0x7000, sub: 0x01, unit: "V", scale: 10.0 / fullScale16},
		{order: "EL4008", output: true, index: 0x7000, sub: 0x01, unit: "V", scale: 10.0 / fullScale16},
	}
}

// lookupCatalog finds the catalog entry for entry e of a terminal.
func lookupCatalog(order string, e Entry) (catalogEntry, bool) {
	for _, c := range catalog() {
		if c.order == order && c.output == e.Output && e.SubIndex == c.sub &&
			e.Index&0xFF0F == c.index && e.Index >= c.index && e.Index < c.index+0x100 {
			return c, true
		}
	}
	return catalogEntry{}, false
}

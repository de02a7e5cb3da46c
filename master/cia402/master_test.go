package cia402

import (
	"testing"

	"github.com/ecagent/ecagent/master"
)

func TestSlaveEntries(t *testing.T) {
	t.Parallel()
	s := &master.Slave{
		RxPDOs: []master.PDO{{Index: 0x1601, Entries: []master.PDOEntry{
			{Index: 0x6040, Bits: 16, Offset: 0}, {Index: 0x60FF, Bits: 32, Offset: 16}}}},
		TxPDOs: []master.PDO{{Index: 0x1A01, Entries: []master.PDOEntry{
			{Index: 0x6041, Bits: 16, Offset: 0}, {Index: 0, Bits: 8, Offset: 16}, {Index: 0x6061, Bits: 8, Offset: 24}}}},
	}
	e := SlaveEntries(s)
	tests := []struct {
		output bool
		index  uint16
		want   Field
		ok     bool
	}{
		{true, 0x6040, Field{0, 16}, true},
		{true, 0x60FF, Field{16, 32}, true},
		{true, 0x6041, Field{}, false}, // an input, not an output
		{false, 0x6041, Field{0, 16}, true},
		{false, 0x6061, Field{24, 8}, true},
		{false, 0x6064, Field{}, false},
	}
	for _, tt := range tests {
		var got Field
		var ok bool
		if tt.output {
			got, ok = e.OutputEntry(tt.index, 0)
		} else {
			got, ok = e.InputEntry(tt.index, 0)
		}
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("entry %#04x (output %v) = %+v, %v; want %+v, %v", tt.index, tt.output, got, ok, tt.want, tt.ok)
		}
	}
}

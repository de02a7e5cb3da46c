package cia402

import "github.com/ecagent/ecagent/master"

// The master's process image is an Image addressed by *master.Slave.
var _ Image[*master.Slave] = (*master.ProcessImage)(nil)

// SlaveEntries returns the [Entries] of a mapped slave: its assigned RxPDO
// and TxPDO entries, with their bit offsets in the slave's outputs and
// inputs.
func SlaveEntries(s *master.Slave) Entries {
	return EntryFuncs{
		Output: func(index uint16, sub uint8) (Field, bool) {
			e, ok := s.OutputEntry(index, sub)
			return Field{Bit: e.Offset, Bits: e.Bits}, ok
		},
		Input: func(index uint16, sub uint8) (Field, bool) {
			e, ok := s.InputEntry(index, sub)
			return Field{Bit: e.Offset, Bits: e.Bits}, ok
		},
	}
}

// BindSlave binds a drive to slave s of the master's process image img,
// after the image is mapped (the slave's PDOs and offsets are known); see
// [Bind].
func BindSlave(img *master.ProcessImage, s *master.Slave, cfg Config) (*Drive, error) {
	return Bind(SlaveImage[*master.Slave](img, s), SlaveEntries(s), cfg)
}

package wire

// PhysicalAddress packs a slave address (ADP) and a register offset (ADO) into
// the 32-bit address field of a physical or broadcast datagram.
func PhysicalAddress(adp, ado uint16) uint32 { return uint32(adp) | uint32(ado)<<16 }

// PositionADP returns the ADP that addresses the slave at ring position pos
// (0 = first slave) with auto-increment commands: each slave increments ADP
// and the one that sees zero is addressed, so the master sends −pos.
func PositionADP(pos int) uint16 { return uint16(-pos) }

// ADP returns the slave-address half of a physical address field.
func ADP(address uint32) uint16 { return uint16(address) }

// ADO returns the register-offset half of a physical address field.
func ADO(address uint32) uint16 { return uint16(address >> 16) }

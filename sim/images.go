package sim

import (
	"fmt"
	"strings"

	"github.com/ecagent/ecagent/ethercat/sii"
)

// The SII images of the built-in models, written the way Beckhoff lays out
// its terminals' EEPROMs (compare testdata/real-hw/sii/el2004.bin):
// Strings, General, FMMU, SyncManager, a SyncUnit category, the PDOs. Where
// a real master read a device's EEPROM in a capture (EL1004, EK1914,
// EL3004), the image has the same bytes at every address the master read;
// the strings nobody read are ours, sized so that the categories sit where
// they sit on the real device.

// Header words 0 (PDI control, ESC configuration) of the models.
const (
	word0Coupler   = 0x0D00 // no PDI; device emulation, DC SYNC and LATCH units
	word0DigitalIO = 0x0104 // digital I/O PDI; device emulation
	word0Extension = 0x0100 // no PDI; device emulation
	word0Micro     = 0x0005 // SPI PDI to an application controller
)

// Category types the sii package keeps raw.
const categorySyncUnit = sii.CategoryType(43)

func header(product, revision uint32, word0 uint16) sii.Header {
	return sii.Header{
		PDIControl: word0,
		Identity:   sii.Identity{VendorID: beckhoff, ProductCode: product, RevisionNumber: revision},
		EEPROMSize: 15,
		Version:    1,
	}
}

// terminalGeneral is the General category of an E-bus terminal.
func terminalGeneral(ebusmA int16) *sii.General {
	return &sii.General{GroupIndex: 2, OrderIndex: 1, NameIndex: 4, Reserved04: 0x0C,
		EBusCurrent: ebusmA, Reserved0E: [2]byte{3, 0}, PhysicalPorts: 0x0033}
}

// beckhoffLayout is the category order of a terminal image; pdo is the PDO
// category type (or both when the device has inputs and outputs).
func beckhoffLayout(d *sii.Device, pdos ...sii.CategoryType) []sii.Category {
	cs := []sii.Category{
		{Type: sii.CategoryStrings, Count: len(d.Strings)},
		{Type: sii.CategoryGeneral, Count: 32},
		{Type: sii.CategoryFMMU, Count: len(d.FMMUs)},
		{Type: sii.CategorySyncManager, Count: len(d.SyncManagers)},
		{Type: categorySyncUnit, Raw: []byte{0xF0, 0xFF}},
	}
	for _, t := range pdos {
		n := len(d.TxPDOs)
		if t == sii.CategoryRxPDO {
			n = len(d.RxPDOs)
		}
		cs = append(cs, sii.Category{Type: t, Count: n})
	}
	return cs
}

// fitStrings pads string i (1-based, one no master reads) with spaces so
// that the Strings category holds exactly size bytes, as on the real
// device. It panics if the strings are already too long: a model defect.
func fitStrings(size, i int, ss []string) []string {
	n := 1
	for _, s := range ss {
		n += 1 + len(s)
	}
	if n > size {
		panic(fmt.Sprintf("sim: strings take %d bytes, the category has %d", n, size))
	}
	out := append([]string(nil), ss...)
	out[i-1] += strings.Repeat(" ", size-n)
	return out
}

func ek1100() *sii.Device {
	h := header(0x044C2C52, 0x00120000, word0Coupler)
	// Beckhoff's private words 0x20–0x22 of the real EK1100.
	copy(h.Reserved1D[0x40-0x3A:], []byte{0x06, 0x00, 0x1A, 0x00, 0x0E, 0x8A})
	return &sii.Device{
		Header:  h,
		Strings: []string{"EK1100", "SystemBk", "System Koppler", "EK1100 EtherCAT-Koppler (2A E-Bus)"},
		General: &sii.General{GroupIndex: 2, OrderIndex: 1, NameIndex: 4, Reserved04: 0x02,
			EBusCurrent: -2000, Reserved0E: [2]byte{3, 0}, PhysicalPorts: 0x0131},
	}
}

func ek1110() *sii.Device {
	return &sii.Device{
		Header:  header(0x04562C52, 0x00110000, word0Extension),
		Strings: []string{"EK1110", "SystemBk", "System Koppler", "EK1110 EtherCAT-Verl\xe4ngerung"},
		General: &sii.General{GroupIndex: 2, OrderIndex: 1, NameIndex: 4, Reserved04: 0x02,
			EBusCurrent: 130, Reserved0E: [2]byte{3, 0}, PhysicalPorts: 0x0013},
	}
}

// digitalIn is an EL10xx: n inputs of 1 bit, SyncManager 0 at 0x1000.
func digitalIn(order string, n int, product uint32, filter string) *sii.Device {
	ss := []string{order, "DigIn", "Digitale Eingangsklemmen (EL1xxx)",
		fmt.Sprintf("%s %dK. Dig. Eingang 24V, %s", order, n, filter), "Channel 1", "Input"}
	for c := 2; c <= n; c++ {
		ss = append(ss, fmt.Sprintf("Channel %d", c))
	}
	d := &sii.Device{
		Header:       header(product, 0x00130000, word0DigitalIO),
		Strings:      ss,
		General:      terminalGeneral(90),
		FMMUs:        []sii.FMMUUsage{sii.FMMUInputs},
		SyncManagers: []sii.SyncManager{{StartAddress: 0x1000, Length: 1, Enable: 0x01, Type: sii.SMProcessDataIn}},
	}
	for c := range n {
		d.TxPDOs = append(d.TxPDOs, sii.PDO{Index: 0x1A00 + uint16(c), NameIndex: channelName(c),
			Flags:   sii.PDOMandatory | sii.PDOFixedContent,
			Entries: []sii.PDOEntry{{Index: 0x6000 + 0x10*uint16(c), SubIndex: 1, NameIndex: 6, DataType: typeBool, BitLength: 1}}})
	}
	d.Categories = beckhoffLayout(d, sii.CategoryTxPDO)
	return d
}

// channelName returns the string index of "Channel c+1" in a digital
// terminal's strings: 5 for the first, 7, 8, … for the others (6 is the
// entry name).
func channelName(c int) uint8 {
	if c == 0 {
		return 5
	}
	return uint8(6 + c)
}

// digitalOut is an EL20xx: n outputs of 1 bit, SyncManager 0 on the
// digital output register 0x0F00.
func digitalOut(order string, n int, product uint32) *sii.Device {
	ss := []string{order, "DigOut", "Digitale Ausgangklemmen (EL2xxx)",
		fmt.Sprintf("%s %dK. Dig. Ausgang 24V, 0.5A", order, n), "Channel 1", "Output"}
	for c := 2; c <= n; c++ {
		ss = append(ss, fmt.Sprintf("Channel %d", c))
	}
	d := &sii.Device{
		Header:  header(product, 0x00100000, word0DigitalIO),
		Strings: ss,
		General: terminalGeneral(100),
		FMMUs:   []sii.FMMUUsage{sii.FMMUOutputs},
		// Length 0: the master sizes the SyncManager from the PDOs.
		SyncManagers: []sii.SyncManager{{StartAddress: 0x0F00, Control: 0x44, Enable: 0x09, Type: sii.SMProcessDataOut}},
	}
	d.Header.PDIConfig2 = 0x000F
	for c := range n {
		d.RxPDOs = append(d.RxPDOs, sii.PDO{Index: 0x1600 + uint16(c), NameIndex: channelName(c),
			Flags:   sii.PDOMandatory | sii.PDOFixedContent,
			Entries: []sii.PDOEntry{{Index: 0x7000 + 0x10*uint16(c), SubIndex: 1, NameIndex: 6, DataType: typeBool, BitLength: 1}}})
	}
	d.Categories = beckhoffLayout(d, sii.CategoryRxPDO)
	return d
}

// mailboxHeader is the header of a terminal with a 128-byte mailbox at
// 0x1000/0x1080 that speaks CoE and FoE.
func mailboxHeader(product, revision uint32) sii.Header {
	h := header(product, revision, word0Micro)
	h.StandardMailbox = sii.Mailbox{ReceiveOffset: 0x1000, ReceiveSize: 0x80, SendOffset: 0x1080, SendSize: 0x80}
	h.MailboxProtocols = sii.ProtocolCoE | sii.ProtocolFoE
	return h
}

// mailboxTerminalSMs are the SyncManagers of a mailbox terminal; in and out
// are the process data sizes.
func mailboxTerminalSMs(out, in uint16) []sii.SyncManager {
	sms := []sii.SyncManager{
		{StartAddress: 0x1000, Length: 0x80, Control: 0x26, Enable: 1, Type: sii.SMMailboxOut},
		{StartAddress: 0x1080, Length: 0x80, Control: 0x22, Enable: 1, Type: sii.SMMailboxIn},
		{StartAddress: 0x1100, Length: out, Control: 0x04, Type: sii.SMProcessDataOut},
		{StartAddress: 0x1180, Length: in, Control: 0x20, Type: sii.SMProcessDataIn},
	}
	if out > 0 {
		sms[2].Control, sms[2].Enable = 0x64, 1
	}
	if in > 0 {
		sms[3].Enable = 1
	}
	return sms
}

// analogInPDOs are the TxPDOs of a 4-channel analog input terminal: per
// channel status bits and a 16-bit value (32 bits), at PDO indexes
// base+step·c. Strings: 5 first channel name, 6–13 entry names, then the
// other channels' names from 15. With ownState the TxPDO state and toggle
// bits are the channel's own sub-indexes 0x0F and 0x10 after pads of 1
// and 6 bits (EL3004 revision 0x00150000: ten entries, issue 37), else
// those of the PDO's 0x18xx object after a pad of 7 bits (nine entries).
func analogInPDOs(step uint16, ownState bool) []sii.PDO {
	var pdos []sii.PDO
	for c := range 4 {
		idx := 0x1A00 + step*uint16(c)
		obj := 0x6000 + 0x10*uint16(c)
		name := uint8(5)
		if c > 0 {
			name = uint8(14 + c)
		}
		pdos = append(pdos, sii.PDO{Index: idx, SyncManager: 3, NameIndex: name, Flags: sii.PDOMandatory,
			Entries: []sii.PDOEntry{
				{Index: obj, SubIndex: 1, NameIndex: 7, DataType: typeBool, BitLength: 1},
				{Index: obj, SubIndex: 2, NameIndex: 8, DataType: typeBool, BitLength: 1},
				{Index: obj, SubIndex: 3, NameIndex: 9, DataType: 0x31, BitLength: 2},
				{Index: obj, SubIndex: 5, NameIndex: 10, DataType: 0x31, BitLength: 2},
				{Index: obj, SubIndex: 7, NameIndex: 11, DataType: typeBool, BitLength: 1},
				{BitLength: 7},
				{Index: 0x1800 + idx - 0x1A00, SubIndex: 7, NameIndex: 12, DataType: typeBool, BitLength: 1},
				{Index: 0x1800 + idx - 0x1A00, SubIndex: 9, NameIndex: 13, DataType: typeBool, BitLength: 1},
				{Index: obj, SubIndex: 0x11, NameIndex: 14, DataType: typeInt16, BitLength: 16},
			}})
		if ownState {
			es := pdos[c].Entries
			pdos[c].Entries = append(es[:5:5], sii.PDOEntry{BitLength: 1}, sii.PDOEntry{BitLength: 6},
				sii.PDOEntry{Index: obj, SubIndex: 0x0F, NameIndex: 12, DataType: typeBool, BitLength: 1},
				sii.PDOEntry{Index: obj, SubIndex: 0x10, NameIndex: 13, DataType: typeBool, BitLength: 1},
				es[8])
		}
	}
	return pdos
}

var analogInEntryNames = []string{"Status", "Underrange", "Overrange", "Limit 1", "Limit 2", "Error",
	"TxPDO State", "TxPDO Toggle", "Value"}

// el3004 is the EL3004 of the given revision. Revision 0x00150000 is the
// one of the mailbox capture (read there: the header, the first strings,
// General, FMMU and SyncManager categories; the Strings category is 0xC3
// words with 21 strings), its PDOs those of the real units (issue 37).
// Revision 0x00110000 has the distributed clock (its system time answers,
// issue 37: ESC configuration with the SYNC and LATCH units) and the
// older PDO layout with the 0x18xx state bits; the rest of it is taken
// from 0x00150000.
func el3004(revision uint32) *sii.Device {
	ss := []string{"EL3004", "AnaIn", "Analoge Eingangsklemmen (EL3xxx)", "EL3004 4K. Ana. Eingang -10-+10V",
		"AI Standard Channel 1"}
	ss = append(ss, analogInEntryNames...)
	for c := 2; c <= 4; c++ {
		ss = append(ss, fmt.Sprintf("AI Standard Channel %d", c))
	}
	for c := 1; c <= 4; c++ {
		ss = append(ss, fmt.Sprintf("AI Compact Channel %d", c))
	}
	d := &sii.Device{
		Header:  mailboxHeader(0x0BBC3052, revision),
		Strings: fitStrings(0xC3*2, 3, ss),
		General: &sii.General{GroupIndex: 2, OrderIndex: 1, NameIndex: 4, Reserved04: 0x0C,
			CoEDetails: sii.CoESDO | sii.CoESDOInfo | sii.CoEPDOAssign, FoEDetails: 1,
			Flags: sii.GeneralMailboxDataLinkLayer, EBusCurrent: 130, Reserved0E: [2]byte{3, 0}, PhysicalPorts: 0x0033},
		FMMUs:        []sii.FMMUUsage{sii.FMMUInputs, sii.FMMUSyncManagerStatus},
		SyncManagers: mailboxTerminalSMs(0, 0x10),
		TxPDOs:       analogInPDOs(2, revision >= 0x00150000),
	}
	if revision < 0x00150000 {
		d.Header.PDIControl |= 0x0C00 // ESC configuration: SYNC and LATCH units
	}
	for c := range 4 {
		d.TxPDOs = append(d.TxPDOs, sii.PDO{Index: 0x1A01 + 2*uint16(c), SyncManager: sii.NoSyncManager,
			NameIndex: uint8(18 + c), Entries: []sii.PDOEntry{
				{Index: 0x6000 + 0x10*uint16(c), SubIndex: 0x11, NameIndex: 14, DataType: typeInt16, BitLength: 16}}})
	}
	d.Categories = beckhoffLayout(d, sii.CategoryTxPDO)
	return d
}

// el3204 is a 4-channel PT100 input; values in 0.1 °C.
func el3204() *sii.Device {
	ss := []string{"EL3204", "AnaIn", "Analoge Eingangsklemmen (EL3xxx)", "EL3204 4K. Ana. Eingang PT100 (RTD)",
		"RTD Inputs Channel 1"}
	ss = append(ss, analogInEntryNames...)
	for c := 2; c <= 4; c++ {
		ss = append(ss, fmt.Sprintf("RTD Inputs Channel %d", c))
	}
	d := &sii.Device{
		Header:  mailboxHeader(0x0C843052, 0x00140000),
		Strings: ss,
		General: &sii.General{GroupIndex: 2, OrderIndex: 1, NameIndex: 4, Reserved04: 0x0C,
			CoEDetails: sii.CoESDO | sii.CoESDOInfo | sii.CoEPDOAssign, FoEDetails: 1,
			Flags: sii.GeneralMailboxDataLinkLayer, EBusCurrent: 190, Reserved0E: [2]byte{3, 0}, PhysicalPorts: 0x0033},
		FMMUs:        []sii.FMMUUsage{sii.FMMUInputs, sii.FMMUSyncManagerStatus},
		SyncManagers: mailboxTerminalSMs(0, 0x10),
		TxPDOs:       analogInPDOs(1, false),
	}
	d.Categories = beckhoffLayout(d, sii.CategoryTxPDO)
	return d
}

// analogOut is an EL4xxx: n 16-bit outputs in SyncManager 2 at 0x1100.
func analogOut(order string, n int, product uint32) *sii.Device {
	name := fmt.Sprintf("%s %dK. Ana. Ausgang 0-10V, 12bit", order, n)
	if order == "EL4132" {
		name = fmt.Sprintf("%s %dK. Ana. Ausgang +/-10V, 16bit", order, n)
	}
	ss := []string{order, "AnaOut", "Analoge Ausgangsklemmen (EL4xxx)", name, "AO Output Channel 1", "Analog output"}
	for c := 2; c <= n; c++ {
		ss = append(ss, fmt.Sprintf("AO Output Channel %d", c))
	}
	d := &sii.Device{
		Header:  mailboxHeader(product, 0x00140000),
		Strings: ss,
		General: &sii.General{GroupIndex: 2, OrderIndex: 1, NameIndex: 4, Reserved04: 0x0C,
			CoEDetails: sii.CoESDO | sii.CoESDOInfo | sii.CoEPDOAssign, FoEDetails: 1,
			Flags: sii.GeneralMailboxDataLinkLayer, EBusCurrent: 225, Reserved0E: [2]byte{3, 0}, PhysicalPorts: 0x0033},
		FMMUs:        []sii.FMMUUsage{sii.FMMUOutputs, sii.FMMUSyncManagerStatus},
		SyncManagers: mailboxTerminalSMs(uint16(2*n), 0),
	}
	for c := range n {
		d.RxPDOs = append(d.RxPDOs, sii.PDO{Index: 0x1600 + uint16(c), SyncManager: 2, NameIndex: channelName(c),
			Flags:   sii.PDOMandatory | sii.PDOFixedContent,
			Entries: []sii.PDOEntry{{Index: 0x7000 + 0x10*uint16(c), SubIndex: 1, NameIndex: 6, DataType: typeInt16, BitLength: 16}}})
	}
	d.Categories = beckhoffLayout(d, sii.CategoryRxPDO)
	return d
}

// ek1914 is the EK1914 of the mailbox capture: a coupler with an
// application controller and a 256-byte mailbox; the capture read its
// header, the first two strings, General, FMMU and SyncManager categories
// (Strings: 0x2C words, 5 strings). Its PDOs are the real units' (issue
// 37): 0x1A00 maps six entries (0x6000:01 8 bits, 0x6001:01 and :02,
// a pad of 6, 0x6000:03 and 0x6000:02 16 bits each), 0x1600 the same with
// 0x70xx; both are assigned with a second PDO each, 0x1A01 of five and
// 0x1601 of seven entries, whose contents are ours (what the real ones map
// is not known here), sized so that the 8-byte SyncManagers stay full.
func ek1914() *sii.Device {
	h := header(0x077A2C52, 0x00120000, word0Micro)
	h.StandardMailbox = sii.Mailbox{ReceiveOffset: 0x1000, ReceiveSize: 0x100, SendOffset: 0x1100, SendSize: 0x100}
	h.MailboxProtocols = sii.ProtocolCoE | sii.ProtocolFoE
	d := &sii.Device{
		Header: h,
		Strings: fitStrings(0x2C*2, 3, []string{"EK1914", "System", "Koppler",
			"EK1914 EtherCAT-Koppler, 2 Std. E/A, TwinSAFE", "EK1914"}),
		General: &sii.General{GroupIndex: 2, ImageIndex: 5, OrderIndex: 1, NameIndex: 4, Reserved04: 0x02,
			CoEDetails: sii.CoESDO | sii.CoESDOInfo, FoEDetails: 1, Flags: sii.GeneralMailboxDataLinkLayer,
			EBusCurrent: -500, Reserved0E: [2]byte{3, 0}, PhysicalPorts: 0x0131},
		FMMUs: []sii.FMMUUsage{sii.FMMUOutputs, sii.FMMUInputs, sii.FMMUSyncManagerStatus},
		SyncManagers: []sii.SyncManager{
			{StartAddress: 0x1000, Length: 0x100, Control: 0x26, Enable: 1, Type: sii.SMMailboxOut},
			{StartAddress: 0x1100, Length: 0x100, Control: 0x22, Enable: 1, Type: sii.SMMailboxIn},
			{StartAddress: 0x1200, Length: 8, Control: 0x24, Enable: 1, Type: sii.SMProcessDataOut},
			{StartAddress: 0x1900, Length: 8, Control: 0x20, Enable: 1, Type: sii.SMProcessDataIn},
		},
		TxPDOs: []sii.PDO{ek1914PDO(0x1A00, 0x6000), {Index: 0x1A01, SyncManager: 3, NameIndex: 3, Flags: sii.PDOMandatory,
			Entries: []sii.PDOEntry{
				{Index: 0x6010, SubIndex: 1, NameIndex: 1, DataType: typeBool, BitLength: 1},
				{Index: 0x6010, SubIndex: 2, NameIndex: 1, DataType: typeBool, BitLength: 1},
				{Index: 0x6010, SubIndex: 3, NameIndex: 1, DataType: typeBool, BitLength: 1},
				{Index: 0x6010, SubIndex: 4, NameIndex: 1, DataType: typeBool, BitLength: 1},
				{BitLength: 12}}}},
		RxPDOs: []sii.PDO{ek1914PDO(0x1600, 0x7000), {Index: 0x1601, SyncManager: 2, NameIndex: 3, Flags: sii.PDOMandatory,
			Entries: []sii.PDOEntry{
				{Index: 0x7010, SubIndex: 1, NameIndex: 1, DataType: typeBool, BitLength: 1},
				{Index: 0x7010, SubIndex: 2, NameIndex: 1, DataType: typeBool, BitLength: 1},
				{Index: 0x7010, SubIndex: 3, NameIndex: 1, DataType: typeBool, BitLength: 1},
				{Index: 0x7010, SubIndex: 4, NameIndex: 1, DataType: typeBool, BitLength: 1},
				{BitLength: 10},
				{Index: 0x7010, SubIndex: 5, NameIndex: 1, DataType: typeBool, BitLength: 1},
				{Index: 0x7010, SubIndex: 6, NameIndex: 1, DataType: typeBool, BitLength: 1}}}},
	}
	d.Categories = []sii.Category{
		{Type: sii.CategoryStrings, Count: 5}, {Type: sii.CategoryGeneral, Count: 32},
		{Type: sii.CategoryFMMU, Count: 3}, {Type: sii.CategorySyncManager, Count: 4},
		{Type: categorySyncUnit, Raw: []byte{0xF0, 0xFF}},
		{Type: sii.CategoryTxPDO, Count: 2}, {Type: sii.CategoryRxPDO, Count: 2},
	}
	return d
}

// ek1914PDO is the EK1914's first PDO, index, on objects base (0x6000
// inputs, 0x7000 outputs) and base+1 (issue 37).
func ek1914PDO(index, base uint16) sii.PDO {
	sm := uint8(3)
	if base == 0x7000 {
		sm = 2
	}
	return sii.PDO{Index: index, SyncManager: sm, NameIndex: 3, Flags: sii.PDOMandatory, Entries: []sii.PDOEntry{
		{Index: base, SubIndex: 1, NameIndex: 1, DataType: typeUint8, BitLength: 8},
		{Index: base + 1, SubIndex: 1, NameIndex: 1, DataType: typeBool, BitLength: 1},
		{Index: base + 1, SubIndex: 2, NameIndex: 1, DataType: typeBool, BitLength: 1},
		{BitLength: 6},
		{Index: base, SubIndex: 3, NameIndex: 1, DataType: typeUint16, BitLength: 16},
		{Index: base, SubIndex: 2, NameIndex: 1, DataType: typeUint16, BitLength: 16}}}
}

// el3004Objects adds what the mailbox capture shows of the EL3004's
// dictionary: software version "08" and the writable code word 0xF008.
func el3004Objects(od *objectDictionary) {
	od.addVar(0x1000, "Device type", typeUint32, u32(0x01491389), readOnly)
	od.addVar(0x100A, "Software version", typeVisibleString, []byte("08"), readOnly)
	od.addVar(0xF008, "Code word", typeUint32, u32(0), writableAlways)
}

func el3204Objects(od *objectDictionary) {
	od.addVar(0x1000, "Device type", typeUint32, u32(0x01491389), readOnly)
	od.addVar(0xF008, "Code word", typeUint32, u32(0), writableAlways)
}

func analogOutObjects(deviceType uint32) func(*objectDictionary) {
	return func(od *objectDictionary) {
		od.addVar(0x1000, "Device type", typeUint32, u32(deviceType), readOnly)
		od.addVar(0xF008, "Code word", typeUint32, u32(0), writableAlways)
	}
}

// akd is the Kollmorgen AKD servo drive (CoE, CiA 402), laid out like the
// real AKD's EEPROM (testdata/real-hw/sii/akd.bin): identity,
// 1 KiB mailboxes at 0x1800/0x1C00, process data SyncManagers at 0x1100
// and 0x1140 sized by the master, the General, FMMU, SyncManager and DC
// categories and the vendor categories with the part number. The four
// flexible PDOs each way are assigned, as on the real drive (issue 37):
// 0x1601–0x1603 map the controlword and the mode of operation, the target
// position or the target velocity, 0x1A01–0x1A03 the statusword and the
// mode display, the actual position or the actual velocity. 0x1600 and
// 0x1A00 are ours: the CiA 402 mapping of the simulated drive. The fixed
// 0x1701, 0x1702, 0x1724, 0x1B01, 0x1B24 and 0x1B26 are the real AKD's
// (they make their objects mappable into the flexible PDOs too).
func akd() *sii.Device {
	h := sii.Header{PDIControl: 0x0009, PDIConfig: 0x0800,
		Identity:   sii.Identity{VendorID: kollmorgen, ProductCode: akdProduct, RevisionNumber: 2},
		EEPROMSize: 15, Version: 1}
	h.BootstrapMailbox = sii.Mailbox{ReceiveOffset: 0x1800, ReceiveSize: 0x400, SendOffset: 0x1C00, SendSize: 0x400}
	h.StandardMailbox = h.BootstrapMailbox
	h.MailboxProtocols = sii.ProtocolEoE | sii.ProtocolCoE | sii.ProtocolFoE
	ss := []string{"AKD", "Drive", "Drives", "AKD EtherCAT Drive (CoE)", "DRIVE", "DcSync", "DcOff",
		"Inputs", "Outputs", "Statusword", "Controlword", "Modes of operation", "Modes of operation display",
		"Target position", "Target velocity", "Target torque", "Position actual value",
		"Position actual internal value", "Velocity actual value", "Torque actual value", "Error code",
		"1st set-point", "Torque offset", "Digital inputs", "AIN.VALUE", "Following error actual value"}
	d := &sii.Device{
		Header:  h,
		Strings: ss,
		General: &sii.General{GroupIndex: 2, ImageIndex: 5, OrderIndex: 1, NameIndex: 4, Reserved04: 0x01,
			CoEDetails: sii.CoESDO | sii.CoEPDOAssign | sii.CoEPDOConfig, FoEDetails: 1, EoEDetails: 3,
			DS402Channels: 1, Flags: sii.GeneralEnableSafeOp | sii.GeneralMailboxDataLinkLayer,
			Reserved0E: [2]byte{3, 0}, PhysicalPorts: 0x0011},
		FMMUs: []sii.FMMUUsage{sii.FMMUOutputs, sii.FMMUInputs, sii.FMMUSyncManagerStatus},
		SyncManagers: []sii.SyncManager{
			{StartAddress: 0x1800, Length: 0x400, Control: 0x26, Enable: 1, Type: sii.SMMailboxOut},
			{StartAddress: 0x1C00, Length: 0x400, Control: 0x22, Enable: 1, Type: sii.SMMailboxIn},
			{StartAddress: 0x1100, Control: 0x24, Enable: 1, Type: sii.SMProcessDataOut},
			{StartAddress: 0x1140, Control: 0x20, Enable: 1, Type: sii.SMProcessDataIn},
		},
		RxPDOs: akdRxPDOs(),
		TxPDOs: akdTxPDOs(),
		DC: []sii.DCSync{
			{AssignActivate: 0x0300, Sync0CycleFactor: 1, NameIndex: akdNameDcSync},
			{Sync0CycleFactor: 1, NameIndex: akdNameDcOff},
		},
	}
	d.Categories = []sii.Category{
		{Type: 0x0800, Raw: []byte("AKD-P00606-NBCC-E000")},
		{Type: 0x0801, Raw: []byte("01-20-00-003")},
		{Type: sii.CategoryStrings, Count: len(d.Strings)},
		{Type: sii.CategoryGeneral, Count: 32},
		{Type: sii.CategoryFMMU, Count: len(d.FMMUs)},
		{Type: sii.CategorySyncManager, Count: len(d.SyncManagers)},
		{Type: categorySyncUnit, Raw: []byte{0xF0, 0xFF}},
		{Type: sii.CategoryTxPDO, Count: len(d.TxPDOs)},
		{Type: sii.CategoryRxPDO, Count: len(d.RxPDOs)},
		{Type: sii.CategoryDC, Count: len(d.DC)},
	}
	return d
}

// The string indexes of the AKD's SII: 1–5 name the device, its group
// and order.
const (
	akdNameDcSync = 6 + iota
	akdNameDcOff
	akdNameInputs
	akdNameOutputs
	akdNameStatusword
	akdNameControlword
	akdNameModes
	akdNameModesDisplay
	akdNameTargetPosition
	akdNameTargetVelocity
	akdNameTargetTorque
	akdNamePosition
	akdNamePositionInternal
	akdNameVelocity
	akdNameTorque
	akdNameErrorCode
	akdNameSetPoint
	akdNameTorqueOffset
	akdNameDigitalInputs
	akdNameAnalogIn
	akdNameFollowingError
)

// akdRxPDOs are the AKD's output PDOs (see akd).
func akdRxPDOs() []sii.PDO {
	const none = sii.NoSyncManager
	controlword := akdEntry(objControlword, 0, akdNameControlword, typeUint16, 16)
	rx := func(index uint16, sm uint8, flags sii.PDOFlags, es ...sii.PDOEntry) sii.PDO {
		return sii.PDO{Index: index, SyncManager: sm, NameIndex: akdNameOutputs, Flags: flags, Entries: es}
	}
	e := akdEntry
	return []sii.PDO{
		rx(0x1600, 2, 0, controlword, e(objModesOfOperation, 0, akdNameModes, typeInt8, 8), sii.PDOEntry{BitLength: 8},
			e(objTargetPosition, 0, akdNameTargetPosition, typeInt32, 32), e(objTargetVelocity, 0, akdNameTargetVelocity, typeInt32, 32),
			e(objTargetTorque, 0, akdNameTargetTorque, typeInt16, 16)),
		rx(0x1601, 2, 0, controlword, e(objModesOfOperation, 0, akdNameModes, typeInt8, 8)),
		rx(0x1602, 2, 0, controlword, e(objTargetPosition, 0, akdNameTargetPosition, typeInt32, 32)),
		rx(0x1603, 2, 0, controlword, e(objTargetVelocity, 0, akdNameTargetVelocity, typeInt32, 32)),
		rx(0x1701, none, sii.PDOFixedContent, e(objInterpolationData, 1, akdNameSetPoint, typeInt32, 32), controlword),
		rx(0x1702, none, sii.PDOFixedContent, e(objTargetVelocity, 0, akdNameTargetVelocity, typeInt32, 32), controlword),
		rx(0x1724, none, sii.PDOFixedContent, e(objTargetPosition, 0, akdNameTargetPosition, typeInt32, 32), controlword,
			e(objTorqueOffset, 0, akdNameTorqueOffset, typeInt16, 16)),
	}
}

// akdTxPDOs are the AKD's input PDOs (see akd).
func akdTxPDOs() []sii.PDO {
	const none = sii.NoSyncManager
	statusword := akdEntry(objStatusword, 0, akdNameStatusword, typeUint16, 16)
	tx := func(index uint16, sm uint8, flags sii.PDOFlags, es ...sii.PDOEntry) sii.PDO {
		return sii.PDO{Index: index, SyncManager: sm, NameIndex: akdNameInputs, Flags: flags, Entries: es}
	}
	e := akdEntry
	return []sii.PDO{
		tx(0x1A00, 3, 0, statusword, e(objModesDisplay, 0, akdNameModesDisplay, typeInt8, 8), sii.PDOEntry{BitLength: 8},
			e(objPositionActual, 0, akdNamePosition, typeInt32, 32), e(objVelocityActual, 0, akdNameVelocity, typeInt32, 32),
			e(objTorqueActual, 0, akdNameTorque, typeInt16, 16), e(objErrorCode, 0, akdNameErrorCode, typeUint16, 16)),
		tx(0x1A01, 3, 0, statusword, e(objModesDisplay, 0, akdNameModesDisplay, typeInt8, 8)),
		tx(0x1A02, 3, 0, statusword, e(objPositionActual, 0, akdNamePosition, typeInt32, 32)),
		tx(0x1A03, 3, 0, statusword, e(objVelocityActual, 0, akdNameVelocity, typeInt32, 32)),
		tx(0x1B01, none, sii.PDOFixedContent, e(objPositionInternal, 0, akdNamePositionInternal, typeInt32, 32), statusword),
		tx(0x1B24, none, sii.PDOFixedContent, e(objPositionActual, 0, akdNamePosition, typeInt32, 32), statusword),
		tx(0x1B26, none, sii.PDOFixedContent, statusword, e(objPositionActual, 0, akdNamePosition, typeInt32, 32),
			e(objTorqueActual, 0, akdNameTorque, typeInt16, 16), e(objDigitalInputs, 0, akdNameDigitalInputs, typeUint32, 32),
			e(0x3470, 4, akdNameAnalogIn, typeInt16, 16), e(objFollowingErrorValue, 0, akdNameFollowingError, typeInt32, 32)),
	}
}

// akdEntry is one entry of an AKD PDO.
func akdEntry(index uint16, sub, name, dataType, bits uint8) sii.PDOEntry {
	return sii.PDOEntry{Index: index, SubIndex: sub, NameIndex: name, DataType: dataType, BitLength: bits}
}

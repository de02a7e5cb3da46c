package sim

import (
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// Microchip's EtherCAT vendor id and the product code of its LAN9252
// evaluation board firmware (SOEM's slave information of two
// LAN9252-EVB-HBI, ethercrab dumps/soem-slaveinfo-ek1100-2-lan9252.txt).
const (
	microchip      = 0x00000009
	lan9252Product = 0x00009252
)

// chipLAN9252 is Microchip's LAN9252: an EtherCAT slave controller with two
// integrated 100BASE-TX PHYs (both ports MII) behind which a
// microcontroller runs the application over SPI or the host bus
// interface. From the LAN9252 datasheet's ESC register tables: type 0xC0,
// 3 FMMUs, 4 SyncManagers, 4 KiB of process RAM, the distributed clock.
// Its EEPROM interface reads 4 bytes at a time and reports 0x0080 when
// idle (bit 7: two address bytes; issue 16, real LAN9252s). Revision 0x02
// and port descriptor 0x1F (ports 0 and 1 MII, port 2 not configured) are
// what the real chips answer (issue 37); the build and feature words are
// not known here and stay at the datasheet's family values (build 0).
var chipLAN9252 = chip{
	info: esc.Info{Type: 0xC0, Revision: 0x02, Build: 0x0000, FMMUs: 3, SyncManagers: 4,
		RAMSizeKiB: 4, PortDescriptor: 0x1F, Features: 0x01CC},
	siiControl: 0x0080,
	sii:        siiI2C,
	dlControl:  [4]byte{2: 0x07},
	dcAlways:   true,
}

// fwLAN9252 is the evaluation board's firmware (Beckhoff's slave stack on
// a microcontroller behind the SPI/HBI bus): far slower than a Beckhoff
// terminal's, every ESC access costing a bus transaction. The real boards
// of issue 37 took 11.7–18.5 ms for a state change and 36.6–39.5 ms to
// answer a mailbox request; the typical values are the middles.
var fwLAN9252 = firmware{esm: span{11_700_000, 15_000_000, 18_500_000},
	mailbox: span{36_600_000, 38_000_000, 39_500_000}}

// lan9252Spec is the simulator's description of a LAN9252 device.
func lan9252Spec() deviceSpec {
	return deviceSpec{name: "LAN9252", chip: chipLAN9252, esmDelay: defaultESMDelay,
		mailboxDelay: defaultMailboxDelay, fw: fwLAN9252, objects: lan9252Objects}
}

// lan9252 is the SII image of a LAN9252 evaluation board as SOEM lists it:
// identity 0x9/0x9252 revision 1, 128-byte mailboxes at 0x1000 and 0x1080
// (CoE with SDO information and complete access), 2 bytes of outputs in
// SyncManager 2 at 0x1100 (watchdog trigger on) and 6 bytes of inputs in
// SyncManager 3 at 0x1400. Laid out as the real board's (issue 37): word 0
// 0x0E89 (the HBI PDI; enhanced link detection, SYNC and LATCH units, as
// the real chip's 0x0140/0x0141 read), a Strings category of 0x84 words
// naming the board "LAN9252-EVB-HBI", then General, and the FMMU and
// SyncManager categories at words 0xD8–0xED. The strings beyond the name
// and the PDO contents (a word of outputs, a word and a double word of
// inputs) are ours; the third string is padded to the real size.
func lan9252() *sii.Device {
	h := sii.Header{PDIControl: 0x0E89,
		Identity:   sii.Identity{VendorID: microchip, ProductCode: lan9252Product, RevisionNumber: 1},
		EEPROMSize: 15, Version: 1}
	h.StandardMailbox = sii.Mailbox{ReceiveOffset: 0x1000, ReceiveSize: 0x80, SendOffset: 0x1080, SendSize: 0x80}
	h.MailboxProtocols = sii.ProtocolCoE
	ss := []string{"LAN9252", "Microchip", "LAN9252 EtherCAT slave controller evaluation board", "LAN9252-EVB-HBI",
		"Outputs", "Inputs", "Output word", "Input word", "Input dword"}
	d := &sii.Device{
		Header:  h,
		Strings: fitStrings(0x84*2, 3, ss),
		General: &sii.General{GroupIndex: 3, ImageIndex: 0, OrderIndex: 1, NameIndex: 4,
			CoEDetails: sii.CoESDO | sii.CoESDOInfo | sii.CoECompleteAccess, Flags: sii.GeneralMailboxDataLinkLayer,
			PhysicalPorts: 0x0011},
		FMMUs: []sii.FMMUUsage{sii.FMMUOutputs, sii.FMMUInputs, sii.FMMUSyncManagerStatus},
		SyncManagers: []sii.SyncManager{
			{StartAddress: 0x1000, Length: 0x80, Control: 0x26, Enable: 1, Type: sii.SMMailboxOut},
			{StartAddress: 0x1080, Length: 0x80, Control: 0x22, Enable: 1, Type: sii.SMMailboxIn},
			{StartAddress: 0x1100, Length: 2, Control: 0x64, Enable: 1, Type: sii.SMProcessDataOut},
			{StartAddress: 0x1400, Length: 6, Control: 0x20, Enable: 1, Type: sii.SMProcessDataIn},
		},
		RxPDOs: []sii.PDO{{Index: 0x1600, SyncManager: 2, NameIndex: 5, Entries: []sii.PDOEntry{
			{Index: 0x7000, SubIndex: 1, NameIndex: 7, DataType: typeUint16, BitLength: 16}}}},
		TxPDOs: []sii.PDO{{Index: 0x1A00, SyncManager: 3, NameIndex: 6, Entries: []sii.PDOEntry{
			{Index: 0x6000, SubIndex: 1, NameIndex: 8, DataType: typeUint16, BitLength: 16},
			{Index: 0x6000, SubIndex: 2, NameIndex: 9, DataType: typeUint32, BitLength: 32}}}},
	}
	d.Categories = []sii.Category{
		{Type: sii.CategoryStrings, Count: len(d.Strings)},
		{Type: sii.CategoryGeneral, Count: 32},
		{Type: sii.CategoryFMMU, Count: len(d.FMMUs)},
		{Type: sii.CategorySyncManager, Count: len(d.SyncManagers)},
		{Type: sii.CategoryTxPDO, Count: len(d.TxPDOs)},
		{Type: sii.CategoryRxPDO, Count: len(d.RxPDOs)},
	}
	return d
}

// lan9252Objects are the objects the evaluation firmware adds.
func lan9252Objects(od *objectDictionary) {
	od.addVar(0x1000, "Device type", typeUint32, u32(0x00001389), readOnly)
	od.addVar(0x1009, "Hardware version", typeVisibleString, []byte("1.0"), readOnly)
	od.addVar(0x100A, "Software version", typeVisibleString, []byte("1.0"), readOnly)
}

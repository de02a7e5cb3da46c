package sim

// CoE data types the drive's dictionary needs beyond those of objects.go
// (ETG.1000.6, basic data types).
const (
	typeInt8  = 0x0002
	typeInt32 = 0x0004
)

// Objects of the CiA 402 drive profile (IEC 61800-7-201) the simulated
// drive has, and the communication objects it adds.
const (
	objErrorRegister       = 0x1001
	objErrorCode           = 0x603F
	objControlword         = 0x6040
	objStatusword          = 0x6041
	objQuickStopOption     = 0x605A
	objModesOfOperation    = 0x6060
	objModesDisplay        = 0x6061
	objPositionInternal    = 0x6063
	objPositionActual      = 0x6064
	objFollowingWindow     = 0x6065
	objVelocityActual      = 0x606C
	objTargetTorque        = 0x6071
	objMaxTorque           = 0x6072
	objMotorRatedTorque    = 0x6076
	objTorqueActual        = 0x6077
	objTargetPosition      = 0x607A
	objMaxMotorSpeed       = 0x6080
	objQuickStopDecel      = 0x6085
	objEncoderResolution   = 0x608F
	objTorqueOffset        = 0x60B2
	objInterpolationData   = 0x60C1
	objMaxAcceleration     = 0x60C5
	objMotorName           = 0x2000
	objFollowingErrorValue = 0x60F4
	objDigitalInputs       = 0x60FD
	objTargetVelocity      = 0x60FF
	objSupportedModes      = 0x6502
)

// CiA 402 device type (0x1000): profile 402, servo drive.
const deviceTypeServo = 0x00020192

// Supported drive modes (0x6502): cyclic synchronous position, velocity
// and torque (bits 7, 8, 9).
const supportedModes = 1<<7 | 1<<8 | 1<<9

// Defaults of the drive's parameters, in the drive's units: position in
// counts (countsPerRev per revolution), velocity in counts/s, torque in
// per mille of the rated torque.
const (
	defaultFollowingWindow = countsPerRev / 16 // 22.5°
	defaultMaxTorque       = 3000              // 300 % of rated torque
	defaultMaxMotorSpeed   = 6000              // rpm
	defaultQuickStopDecel  = 500 * countsPerRev
	defaultMaxAcceleration = 2000 * countsPerRev // about what the peak torque gives
	defaultMotorName       = "AKM24D-ANCNR-00 (simulated): 0.84 Nm continuous, 6000 rpm, 2^20 counts/rev single-turn encoder; load inertia 2e-4 kg m^2, viscous friction"
	quickStopOptionRamp    = 2 // slow down on the quick stop ramp, then switch on disabled
)

// driveObjects adds the CiA 402 objects of the simulated drive. The
// objects PDOs map are process entries: an input (statusword, actual
// values) has no value of its own and reads the process image (the drive
// writes its inputs there every cycle), so an SDO upload of 0x6041 returns
// the statusword the master sees. An output (controlword, mode, targets,
// offset) is writable over SDO in PREOP, SAFEOP and OP, as on the real
// AKD: the value written is what the drive takes where no assigned RxPDO
// maps the object, and what the process image holds until the master's
// next outputs where one does (see mailbox.store and drive.sdoWritten).
// The parameters (following error window, limits, ramps) are writable in
// any state and take effect in the next cycle.
func driveObjects(od *objectDictionary) {
	od.addVar(0x1000, "Device type", typeUint32, u32(deviceTypeServo), readOnly)
	od.addVar(objErrorRegister, "Error register", typeUint8, []byte{0}, readOnly)
	for _, p := range []struct {
		index    uint16
		name     string
		dataType uint16
		bits     int
		out      bool // RxPDO-mappable: writable over SDO
	}{
		{objErrorCode, "Error code", typeUint16, 16, false},
		{objControlword, "Controlword", typeUint16, 16, true},
		{objStatusword, "Statusword", typeUint16, 16, false},
		{objModesOfOperation, "Modes of operation", typeInt8, 8, true},
		{objModesDisplay, "Modes of operation display", typeInt8, 8, false},
		{objPositionInternal, "Position actual internal value", typeInt32, 32, false},
		{objPositionActual, "Position actual value", typeInt32, 32, false},
		{objVelocityActual, "Velocity actual value", typeInt32, 32, false},
		{objTargetTorque, "Target torque", typeInt16, 16, true},
		{objTorqueActual, "Torque actual value", typeInt16, 16, false},
		{objTargetPosition, "Target position", typeInt32, 32, true},
		{objTorqueOffset, "Torque offset", typeInt16, 16, true},
		{objFollowingErrorValue, "Following error actual value", typeInt32, 32, false},
		{objDigitalInputs, "Digital inputs", typeUint32, 32, false},
		{objTargetVelocity, "Target velocity", typeInt32, 32, true},
	} {
		e := entry{sub: 0, name: p.name, dataType: p.dataType, bits: p.bits, process: true}
		if p.out {
			e = outputEntry(e)
		}
		if p.index == objModesOfOperation {
			e.value[0] = byte(ModeCSP) // the mode the drive starts in
		}
		od.add(object{index: p.index, name: p.name, code: codeVar, entries: []entry{e}})
	}
	od.add(object{index: objInterpolationData, name: "Interpolation data record", code: codeArray, entries: []entry{
		{sub: 0, name: "SubIndex 000", dataType: typeUint8, bits: 8, value: []byte{1}},
		outputEntry(entry{sub: 1, name: "1st set-point", dataType: typeInt32, bits: 32, process: true}),
	}})
	od.addVar(objQuickStopOption, "Quick stop option code", typeInt16, u16(quickStopOptionRamp), readOnly)
	od.addVar(objFollowingWindow, "Following error window", typeUint32, u32(defaultFollowingWindow), writableAlways)
	od.addVar(objMaxTorque, "Max torque", typeUint16, u16(defaultMaxTorque), writableAlways)
	od.addVar(objMotorRatedTorque, "Motor rated torque", typeUint32, u32(uint32(ratedTorque*1000)), readOnly)
	od.addVar(objMaxMotorSpeed, "Max motor speed", typeUint32, u32(defaultMaxMotorSpeed), writableAlways)
	od.addVar(objQuickStopDecel, "Quick stop deceleration", typeUint32, u32(defaultQuickStopDecel), writableAlways)
	od.addVar(objMaxAcceleration, "Max acceleration", typeUint32, u32(defaultMaxAcceleration), writableAlways)
	// A manufacturer-specific text parameter, as drives keep the motor's
	// name plate: long enough to need segmented transfers through the
	// drive's 128-byte mailbox.
	od.addVar(objMotorName, "Motor name", typeVisibleString, []byte(defaultMotorName), writableAlways)
	od.add(object{index: objEncoderResolution, name: "Position encoder resolution", code: codeArray, entries: []entry{
		{sub: 0, name: "SubIndex 000", dataType: typeUint8, bits: 8, value: []byte{2}},
		{sub: 1, name: "Encoder increments", dataType: typeUint32, bits: 32, value: u32(countsPerRev)},
		{sub: 2, name: "Motor revolutions", dataType: typeUint32, bits: 32, value: u32(1)},
	}})
	od.addVar(objSupportedModes, "Supported drive modes", typeUint32, u32(supportedModes), readOnly)
}

// outputEntry makes process entry e an output that SDO writes in any
// state: it gets a value of its own, zero until written.
func outputEntry(e entry) entry {
	e.access = writableAlways
	e.value = make([]byte, (e.bits+7)/8)
	return e
}

// paramU32 returns the value of parameter index (sub-index 0, at most 4
// bytes, little endian), or def when the dictionary lacks it.
func (od *objectDictionary) paramU32(index uint16, def uint32) uint32 {
	o := od.find(index)
	if o == nil {
		return def
	}
	e := o.entry(0)
	if e == nil || e.process {
		return def
	}
	var v uint32
	for i, b := range e.value[:min(len(e.value), 4)] {
		v |= uint32(b) << (8 * i)
	}
	return v
}

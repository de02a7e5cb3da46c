package cia402

// Object indexes of the CiA 402 objects the drive helper uses (all
// sub-index 0).
const (
	ObjErrorCode      uint16 = 0x603F // error code, UINT16 (TxPDO)
	ObjControlword    uint16 = 0x6040 // controlword, UINT16 (RxPDO)
	ObjStatusword     uint16 = 0x6041 // statusword, UINT16 (TxPDO)
	ObjModeOfOp       uint16 = 0x6060 // modes of operation, INT8 (RxPDO)
	ObjModeDisplay    uint16 = 0x6061 // modes of operation display, INT8 (TxPDO)
	ObjPositionActual uint16 = 0x6064 // position actual value, INT32 (TxPDO)
	ObjVelocityActual uint16 = 0x606C // velocity actual value, INT32 (TxPDO)
	ObjTargetTorque   uint16 = 0x6071 // target torque, INT16 (RxPDO)
	ObjTorqueActual   uint16 = 0x6077 // torque actual value, INT16 (TxPDO)
	ObjTargetPosition uint16 = 0x607A // target position, INT32 (RxPDO)
	ObjTargetVelocity uint16 = 0x60FF // target velocity, INT32 (RxPDO)
)

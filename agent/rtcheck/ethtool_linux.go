package rtcheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EthtoolNIC reads NIC settings with the kernel's ethtool ioctls
// (SIOCETHTOOL) on a datagram socket opened for each query. It needs no
// privilege and changes nothing. The zero value is ready to use.
type EthtoolNIC struct{}

var _ NICInfo = EthtoolNIC{}

// Constants of linux/ethtool.h that x/sys does not name.
const (
	ethSSFeatures  = 4  // ETH_SS_FEATURES: the string set of feature names
	ethGStringLen  = 32 // ETH_GSTRING_LEN
	maxFeatureBits = 1 << 12
)

// ifreqData is struct ifreq with its union holding a pointer (ifr_data),
// padded to the union's size on 64-bit hosts.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolCoalesce is struct ethtool_coalesce.
type ethtoolCoalesce struct {
	cmd                      uint32
	rxCoalesceUsecs          uint32
	rxMaxCoalescedFrames     uint32
	rxCoalesceUsecsIRQ       uint32
	rxMaxCoalescedFramesIRQ  uint32
	txCoalesceUsecs          uint32
	txMaxCoalescedFrames     uint32
	txCoalesceUsecsIRQ       uint32
	txMaxCoalescedFramesIRQ  uint32
	statsBlockCoalesceUsecs  uint32
	useAdaptiveRxCoalesce    uint32
	useAdaptiveTxCoalesce    uint32
	pktRateLow               uint32
	rxCoalesceUsecsLow       uint32
	rxMaxCoalescedFramesLow  uint32
	txCoalesceUsecsLow       uint32
	txMaxCoalescedFramesLow  uint32
	pktRateHigh              uint32
	rxCoalesceUsecsHigh      uint32
	rxMaxCoalescedFramesHigh uint32
	txCoalesceUsecsHigh      uint32
	txMaxCoalescedFramesHigh uint32
	rateSampleInterval       uint32
}

// ethtoolRingparam is struct ethtool_ringparam.
type ethtoolRingparam struct {
	cmd              uint32
	rxMaxPending     uint32
	rxMiniMaxPending uint32
	rxJumboMaxPend   uint32
	txMaxPending     uint32
	rxPending        uint32
	rxMiniPending    uint32
	rxJumboPending   uint32
	txPending        uint32
}

// ioctl runs one SIOCETHTOOL request; data points at the request, whose
// first word is the ethtool command.
func (EthtoolNIC) ioctl(iface, op string, data unsafe.Pointer) error {
	if iface == "" || len(iface) >= unix.IFNAMSIZ {
		return fmt.Errorf("ethtool %s %q: %w", op, iface, ErrNoInterface)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ethtool %s %s: socket: %w", op, iface, err)
	}
	defer unix.Close(fd)
	req := &ifreqData{data: data}
	copy(req.name[:], iface)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(req)))
	runtime.KeepAlive(req)
	runtime.KeepAlive(data)
	if errno != 0 {
		return ethtoolError(iface, op, errno)
	}
	return nil
}

func ethtoolError(iface, op string, errno unix.Errno) error {
	switch {
	case errors.Is(errno, unix.EOPNOTSUPP):
		return fmt.Errorf("ethtool %s %s: %w", op, iface, ErrNotSupported)
	case errors.Is(errno, unix.ENODEV):
		return fmt.Errorf("ethtool %s %s: %w", op, iface, ErrNoInterface)
	}
	return fmt.Errorf("ethtool %s %s: %w", op, iface, errno)
}

// Driver implements [NICInfo] with ETHTOOL_GDRVINFO.
func (n EthtoolNIC) Driver(iface string) (string, error) {
	info := &unix.EthtoolDrvinfo{Cmd: unix.ETHTOOL_GDRVINFO}
	if err := n.ioctl(iface, "driver info", unsafe.Pointer(info)); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(info.Driver[:]), nil
}

// Coalescing implements [NICInfo] with ETHTOOL_GCOALESCE.
func (n EthtoolNIC) Coalescing(iface string) (Coalescing, error) {
	c := &ethtoolCoalesce{cmd: unix.ETHTOOL_GCOALESCE}
	if err := n.ioctl(iface, "get coalescing", unsafe.Pointer(c)); err != nil {
		return Coalescing{}, err
	}
	return Coalescing{
		RxUsecs:    c.rxCoalesceUsecs,
		TxUsecs:    c.txCoalesceUsecs,
		RxFrames:   c.rxMaxCoalescedFrames,
		TxFrames:   c.txMaxCoalescedFrames,
		AdaptiveRx: c.useAdaptiveRxCoalesce != 0,
		AdaptiveTx: c.useAdaptiveTxCoalesce != 0,
	}, nil
}

// Rings implements [NICInfo] with ETHTOOL_GRINGPARAM.
func (n EthtoolNIC) Rings(iface string) (Rings, error) {
	r := &ethtoolRingparam{cmd: unix.ETHTOOL_GRINGPARAM}
	if err := n.ioctl(iface, "get rings", unsafe.Pointer(r)); err != nil {
		return Rings{}, err
	}
	return Rings{RxPending: r.rxPending, TxPending: r.txPending, RxMax: r.rxMaxPending, TxMax: r.txMaxPending}, nil
}

// Features implements [NICInfo]: ETHTOOL_GSSET_INFO counts the feature
// names, ETHTOOL_GSTRINGS reads them and ETHTOOL_GFEATURES reads their
// state, one bit per name in 32-bit blocks of available, requested, active
// and never-changed masks.
func (n EthtoolNIC) Features(iface string) (Features, error) {
	names, err := n.featureNames(iface)
	if err != nil {
		return nil, err
	}
	blocks := (len(names) + 31) / 32
	buf := make([]byte, 8+16*blocks)
	binary.NativeEndian.PutUint32(buf[0:], unix.ETHTOOL_GFEATURES)
	binary.NativeEndian.PutUint32(buf[4:], uint32(blocks))
	if err := n.ioctl(iface, "get features", unsafe.Pointer(&buf[0])); err != nil {
		return nil, err
	}
	features := make(Features, len(names))
	for i, name := range names {
		block := buf[8+16*(i/32):]
		bit := uint32(1) << (i % 32)
		available := binary.NativeEndian.Uint32(block[0:])
		active := binary.NativeEndian.Uint32(block[8:])
		neverChanged := binary.NativeEndian.Uint32(block[12:])
		features[name] = Feature{Active: active&bit != 0, Fixed: available&bit == 0 || neverChanged&bit != 0}
	}
	return features, nil
}

// featureNames reads the kernel's feature names, indexed by feature bit.
func (n EthtoolNIC) featureNames(iface string) ([]string, error) {
	// struct ethtool_sset_info: cmd, reserved, a 64-bit set mask, then one
	// count per set in the mask.
	info := make([]byte, 20)
	binary.NativeEndian.PutUint32(info[0:], unix.ETHTOOL_GSSET_INFO)
	binary.NativeEndian.PutUint64(info[8:], 1<<ethSSFeatures)
	if err := n.ioctl(iface, "get string set info", unsafe.Pointer(&info[0])); err != nil {
		return nil, err
	}
	if binary.NativeEndian.Uint64(info[8:])&(1<<ethSSFeatures) == 0 {
		return nil, fmt.Errorf("ethtool get string set info %s: no feature names: %w", iface, ErrNotSupported)
	}
	count := int(binary.NativeEndian.Uint32(info[16:]))
	if count <= 0 || count > maxFeatureBits {
		return nil, fmt.Errorf("ethtool get string set info %s: %d feature names", iface, count)
	}
	// struct ethtool_gstrings: cmd, string_set, len, then len strings of
	// ETH_GSTRING_LEN bytes.
	strs := make([]byte, 12+count*ethGStringLen)
	binary.NativeEndian.PutUint32(strs[0:], unix.ETHTOOL_GSTRINGS)
	binary.NativeEndian.PutUint32(strs[4:], ethSSFeatures)
	binary.NativeEndian.PutUint32(strs[8:], uint32(count))
	if err := n.ioctl(iface, "get feature names", unsafe.Pointer(&strs[0])); err != nil {
		return nil, err
	}
	names := make([]string, count)
	for i := range names {
		names[i] = unix.ByteSliceToString(strs[12+i*ethGStringLen : 12+(i+1)*ethGStringLen])
	}
	return names, nil
}

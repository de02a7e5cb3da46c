package rtcheck

// NICInfo reads a network interface's ethtool settings. [EthtoolNIC] asks
// the kernel; tests supply fixtures. Methods return an error matching
// [ErrNotSupported] (errors.Is) when the driver does not implement the
// query, and [ErrNoInterface] when the interface does not exist.
type NICInfo interface {
	// Driver returns the name of the interface's driver, e.g. "igb".
	Driver(iface string) (string, error)
	// Coalescing returns the interrupt coalescing settings (ethtool -c).
	Coalescing(iface string) (Coalescing, error)
	// Features returns the offload features (ethtool -k), keyed by the
	// kernel's feature name, e.g. "rx-gro".
	Features(iface string) (Features, error)
	// Rings returns the ring sizes (ethtool -g).
	Rings(iface string) (Rings, error)
}

// nicError is the type of the NICInfo sentinel errors; being a string
// type, they are constants.
type nicError string

func (e nicError) Error() string { return string(e) }

const (
	// ErrNotSupported is matched by errors from drivers that do not
	// implement an ethtool query (veth has no coalescing or rings).
	ErrNotSupported = nicError("not supported by driver")
	// ErrNoInterface is matched by errors about an interface that does not
	// exist.
	ErrNoInterface = nicError("no such network interface")
)

// Coalescing is the part of struct ethtool_coalesce that delays interrupts.
type Coalescing struct {
	// RxUsecs and TxUsecs delay an interrupt by up to this many µs after a
	// frame (ethtool rx-usecs, tx-usecs); 0 interrupts at once.
	RxUsecs, TxUsecs uint32
	// RxFrames and TxFrames delay an interrupt until this many frames have
	// arrived or gone (rx-frames, tx-frames); 0 and 1 do not delay.
	RxFrames, TxFrames uint32
	// AdaptiveRx and AdaptiveTx let the driver choose the delays.
	AdaptiveRx, AdaptiveTx bool
}

// Feature is the state of one offload feature.
type Feature struct {
	// Active says the feature is on.
	Active bool
	// Fixed says the driver does not let it change.
	Fixed bool
}

// Features maps the kernel's feature names ("tx-scatter-gather", "rx-gro",
// ...) to their state.
type Features map[string]Feature

// Rings is the part of struct ethtool_ringparam about the RX and TX rings.
type Rings struct {
	// RxPending and TxPending are the current ring sizes in descriptors.
	RxPending, TxPending uint32
	// RxMax and TxMax are the largest sizes the hardware allows.
	RxMax, TxMax uint32
}

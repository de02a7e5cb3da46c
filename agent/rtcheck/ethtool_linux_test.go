package rtcheck

import (
	"errors"
	"os"
	"testing"
	"unsafe"
)

// TestEthtoolLoopback asks the kernel about lo, which every host has: it
// reports features but, like veth, no coalescing and no rings, which must
// come back as ErrNotSupported.
func TestEthtoolLoopback(t *testing.T) {
	var nic EthtoolNIC
	features, err := nic.Features("lo")
	if err != nil {
		t.Fatalf("Features(lo): %v", err)
	}
	if len(features) < 32 {
		t.Errorf("Features(lo) returned %d features, want the kernel's whole list", len(features))
	}
	if f, ok := features["tx-scatter-gather"]; !ok || !f.Active {
		t.Errorf("lo tx-scatter-gather = %+v, %v; want active", f, ok)
	}
	if f, ok := features["rx-lro"]; !ok || f.Active || !f.Fixed {
		t.Errorf("lo rx-lro = %+v, %v; want off and fixed", f, ok)
	}
	if _, err := nic.Coalescing("lo"); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Coalescing(lo) error = %v, want ErrNotSupported", err)
	}
	if _, err := nic.Rings("lo"); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Rings(lo) error = %v, want ErrNotSupported", err)
	}
}

func TestEthtoolNoInterface(t *testing.T) {
	var nic EthtoolNIC
	for _, name := range []string{"ecagentnone0", "", "a-name-far-too-long-for-linux"} {
		if _, err := nic.Features(name); !errors.Is(err, ErrNoInterface) {
			t.Errorf("Features(%q) error = %v, want ErrNoInterface", name, err)
		}
		if _, err := nic.Coalescing(name); !errors.Is(err, ErrNoInterface) {
			t.Errorf("Coalescing(%q) error = %v, want ErrNoInterface", name, err)
		}
	}
}

// TestEthtoolInterface runs the ethtool queries and the NIC checks on the
// interface ECAGENT_RTCHECK_IF names (a veth, or the real EtherCAT NIC).
// On a veth, coalescing and rings must be skipped as not supported.
func TestEthtoolInterface(t *testing.T) {
	iface := os.Getenv("ECAGENT_RTCHECK_IF")
	if iface == "" {
		t.Skip("set ECAGENT_RTCHECK_IF to an interface (e.g. a veth) to run")
	}
	var nic EthtoolNIC
	driver, err := nic.Driver(iface)
	if err != nil {
		t.Fatalf("Driver(%s): %v", iface, err)
	}
	if _, err := nic.Features(iface); err != nil {
		t.Errorf("Features(%s): %v", iface, err)
	}
	opts := DefaultOptions()
	opts.Interface = iface
	h := newHost(opts)
	for _, c := range []struct {
		id  string
		run func(*host) verdict
	}{{"nic_link", checkNICLink}, {"nic_coalescing", checkNICCoalescing}, {"nic_offloads", checkNICOffloads}, {"nic_rings", checkNICRings}, {"nic_xdp", checkNICXDP}} {
		v := c.run(h)
		t.Logf("%s: %v %s", c.id, v.status, v.found)
		if !v.status.valid() || v.found == "" {
			t.Errorf("%s: status %v found %q", c.id, v.status, v.found)
		}
		if driver == "veth" && (c.id == "nic_coalescing" || c.id == "nic_rings") && v.status != Skip {
			t.Errorf("%s on veth: %v, want skip (not supported by driver)", c.id, v.status)
		}
	}
}

// TestEthtoolLayouts pins the request structs to the kernel's sizes.
func TestEthtoolLayouts(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) == 8 && unsafe.Sizeof(ifreqData{}) != 40 {
		t.Errorf("ifreqData is %d bytes, struct ifreq is 40", unsafe.Sizeof(ifreqData{}))
	}
	if n := unsafe.Sizeof(ethtoolCoalesce{}); n != 23*4 {
		t.Errorf("ethtoolCoalesce is %d bytes, struct ethtool_coalesce is 92", n)
	}
	if n := unsafe.Sizeof(ethtoolRingparam{}); n != 9*4 {
		t.Errorf("ethtoolRingparam is %d bytes, struct ethtool_ringparam is 36", n)
	}
}

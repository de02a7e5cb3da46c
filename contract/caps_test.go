package contract

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCycleCapabilities: each setting that needs a capability adds it,
// nothing else does, and CAP_SYS_ADMIN is never needed.
func TestCycleCapabilities(t *testing.T) {
	rt := CapsOf(CapSysNice, CapIPCLock)
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   Caps
	}{
		{"defaults: simulated segment", func(*Config) {}, rt},
		{"bus.link auto", func(c *Config) { c.Bus.Interface = "eth1" }, rt | CapsOf(CapNetRaw, CapNetAdmin, CapBPF)},
		{"bus.link xdp", func(c *Config) { c.Bus.Interface, c.Bus.Link = "eth1", LinkXDP }, rt | CapsOf(CapNetRaw, CapNetAdmin, CapBPF)},
		{"bus.link mmap", func(c *Config) { c.Bus.Interface, c.Bus.Link = "eth1", LinkMmap }, rt | CapsOf(CapNetRaw)},
		{"bus.link raw", func(c *Config) { c.Bus.Interface, c.Bus.Link = "eth1", LinkRaw }, rt | CapsOf(CapNetRaw)},
		{"cycle.priority 0", func(c *Config) { c.Cycle.Priority = 0 }, CapsOf(CapIPCLock)},
		{"cycle.lockmemory false", func(c *Config) { c.Cycle.LockMemory = false }, CapsOf(CapSysNice)},
		{"cycle.core pinned", func(c *Config) { c.Cycle.Core = 1 }, rt},
		{"nothing real-time, raw", func(c *Config) {
			c.Bus.Interface, c.Bus.Link, c.Cycle.Priority, c.Cycle.LockMemory = "eth1", LinkRaw, 0, false
		}, CapsOf(CapNetRaw)},
	} {
		c := Default()
		tc.change(&c)
		if got := c.Capabilities(); got != tc.want || got.Has(CapSysAdmin) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCapsText(t *testing.T) {
	for _, tc := range []struct {
		s    Caps
		want string
	}{
		{0, "none"},
		{CapsOf(CapNetRaw, CapSysNice, CapIPCLock), "CAP_NET_RAW,CAP_IPC_LOCK,CAP_SYS_NICE"},
		{CapsOf(0, CapBPF, 40, 41), "CAP_CHOWN,CAP_BPF,CAP_CHECKPOINT_RESTORE,CAP_41"},
	} {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("%#x: %q, want %q", uint64(tc.s), got, tc.want)
		}
	}
	b, err := json.Marshal(map[string]Caps{"effective": CapsOf(CapNetRaw)})
	if err != nil || string(b) != `{"effective":"CAP_NET_RAW"}` {
		t.Errorf("JSON: %s, %v", b, err)
	}
	if got := CapsOf(CapSysAdmin, CapNetRaw).List(); len(got) != 2 || got[0] != CapNetRaw || got[1] != CapSysAdmin {
		t.Errorf("List: %v", got)
	}
}

func TestParseProcessCaps(t *testing.T) {
	status := "Name:\tecagent-cycle\nUid:\t0\t0\t0\t0\nCapInh:\t0000000000804000\nCapPrm:\t0000000000806000\n" +
		"CapEff:\t0000000000802000\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000800000\nNoNewPrivs:\t1\nSeccomp:\t0\n"
	pc, err := ParseProcessCaps([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	want := ProcessCaps{Inheritable: 0x804000, Permitted: 0x806000, Effective: 0x802000, Bounding: 0x1ffffffffff,
		Ambient: 0x800000, NoNewPrivs: true}
	if pc != want {
		t.Errorf("%+v, want %+v", pc, want)
	}
	for _, bad := range []string{
		strings.Replace(status, "CapAmb:\t0000000000800000\n", "", 1),
		strings.Replace(status, "0000000000802000", "x", 1),
	} {
		if _, err := ParseProcessCaps([]byte(bad)); err == nil {
			t.Errorf("no error for\n%s", bad)
		}
	}
	self, err := ReadProcessCaps(0)
	if err != nil || self.Effective&^self.Permitted != 0 {
		t.Errorf("this process: %+v, %v", self, err)
	}
}

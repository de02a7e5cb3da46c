package rtcheck

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		text    string
		last    int
		want    string // formatted set; "" when an error is expected
		wantErr bool
	}{
		{"", -1, "none", false},
		{"3\n", -1, "3", false},
		{"0-3,6", -1, "0-3,6", false},
		{"2-3,5", -1, "2-3,5", false},
		{"5,2-3", -1, "2-3,5", false},
		{"0-15:2/4", -1, "0-1,4-5,8-9,12-13", false},
		{"0-7:1/3", -1, "0,3,6", false},
		{"1-N", 7, "1-7", false},
		{"N", 3, "3", false},
		{"all", 3, "0-3", false},
		{"all", -1, "", true},
		{"N", -1, "", true},
		{"3-1", -1, "", true},
		{"a", -1, "", true},
		{"1,,2", -1, "", true},
		{"-1", -1, "", true},
		{"0-3:0/4", -1, "", true},
		{"0-3:2/1", -1, "", true},
		{"5:1/2", -1, "", true},
		{"99999", -1, "", true},
	}
	for _, tt := range tests {
		got, err := parseCPUList(tt.text, tt.last)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseCPUList(%q, %d) error = %v, want error %v", tt.text, tt.last, err, tt.wantErr)
			continue
		}
		if err == nil && got.String() != tt.want {
			t.Errorf("parseCPUList(%q, %d) = %s, want %s", tt.text, tt.last, got, tt.want)
		}
	}
}

func TestParseCPUMask(t *testing.T) {
	tests := []struct {
		text    string
		want    string
		wantErr bool
	}{
		{"f\n", "0-3", false},
		{"8", "3", false},
		{"00000000,00000001", "0", false},
		{"00000001,00000000", "32", false},
		{"80000000,00000005", "0,2,63", false},
		{"0", "none", false},
		{"", "", true},
		{"xyz", "", true},
		{"1ffffffff", "", true}, // word wider than 32 bits
	}
	for _, tt := range tests {
		got, err := parseCPUMask(tt.text)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseCPUMask(%q) error = %v, want error %v", tt.text, err, tt.wantErr)
			continue
		}
		if err == nil && got.String() != tt.want {
			t.Errorf("parseCPUMask(%q) = %s, want %s", tt.text, got, tt.want)
		}
	}
}

func TestFormatCPUMask(t *testing.T) {
	for _, tt := range []struct {
		list string
		want string
	}{
		{"", "0"},
		{"0-2", "7"},
		{"0-2,4-7", "f7"},
		{"0,33", "2,00000001"},
	} {
		set, err := parseCPUList(tt.list, -1)
		if err != nil {
			t.Fatal(err)
		}
		got := formatCPUMask(set)
		if got != tt.want {
			t.Errorf("formatCPUMask(%s) = %q, want %q", tt.list, got, tt.want)
		}
		back, err := parseCPUMask(got)
		if err != nil || back.String() != set.String() {
			t.Errorf("parseCPUMask(%q) = %s, %v; want %s", got, back, err, set)
		}
	}
}

func TestCPUSetOperations(t *testing.T) {
	s, _ := parseCPUList("0-3,70", -1)
	if !s.has(70) || s.has(4) || s.has(-1) || s.has(1000) {
		t.Errorf("has: wrong membership in %s", s)
	}
	if s.count() != 5 || s.last() != 70 {
		t.Errorf("count %d last %d, want 5 and 70", s.count(), s.last())
	}
	if got := s.without(2).String(); got != "0-1,3,70" {
		t.Errorf("without(2) = %s", got)
	}
	if got := s.union(cpuOf(5)).String(); got != "0-3,5,70" {
		t.Errorf("union = %s", got)
	}
	if !cpuOf(3).only(3) || s.only(3) || (cpuSet{}).only(0) {
		t.Error("only: wrong answer")
	}
	if (cpuSet{}).last() != -1 || !(cpuSet{}).empty() {
		t.Error("empty set: wrong last or empty")
	}
}

func TestParseCmdline(t *testing.T) {
	params := parseCmdline(`BOOT_IMAGE=/vmlinuz ro quiet isolcpus=2 rcu-nocbs=2-3 foo="a b=c" isolcpus=managed_irq,3 -- init-arg isolcpus=9` + "\n")
	tests := []struct {
		name  string
		want  string
		found bool
	}{
		{"ro", "ro", true},
		{"isolcpus", "isolcpus=managed_irq,3", true}, // the last one before "--"
		{"rcu_nocbs", "rcu_nocbs=2-3", true},         // '-' folds to '_'
		{"rcu-nocbs", "rcu_nocbs=2-3", true},
		{"foo", "foo=a b=c", true}, // quotes keep the space and go away
		{"init-arg", "", false},
		{"nohz_full", "", false},
	}
	for _, tt := range tests {
		p, ok := params.lookup(tt.name)
		if ok != tt.found || (ok && p.String() != tt.want) {
			t.Errorf("lookup(%q) = %q, %v; want %q, %v", tt.name, p.String(), ok, tt.want, tt.found)
		}
	}
	if p, _ := params.lookup("quiet"); p.hasValue {
		t.Error("bare parameter has a value")
	}
}

func TestParseIsolcpus(t *testing.T) {
	tests := []struct {
		value   string
		flags   []string
		cpus    string
		domain  bool
		wantErr bool
	}{
		{"3", nil, "3", true, false},
		{"2-3,5", nil, "2-3,5", true, false},
		{"managed_irq,domain,3", []string{"managed_irq", "domain"}, "3", true, false},
		{"nohz,managed_irq,1-3", []string{"nohz", "managed_irq"}, "1-3", false, false},
		{"domain,2-N", []string{"domain"}, "2-7", true, false},
		{"N", nil, "7", true, false},
		{"bogus,3", nil, "", false, true},
		{"domain,x", nil, "", false, true},
	}
	for _, tt := range tests {
		iso, err := parseIsolcpus(tt.value, 7)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseIsolcpus(%q) error = %v, want error %v", tt.value, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(iso.flags, tt.flags) || iso.cpus.String() != tt.cpus || iso.domain() != tt.domain {
			t.Errorf("parseIsolcpus(%q) = flags %v cpus %s domain %v; want %v %s %v", tt.value, iso.flags, iso.cpus, iso.domain(), tt.flags, tt.cpus, tt.domain)
		}
	}
}

func TestParseInterrupts(t *testing.T) {
	text := "" +
		"           CPU0       CPU1       \n" +
		"  0:         44          0   IO-APIC   2-edge      timer\n" +
		" 38:          0       1544 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n" +
		" 57:          1          2  IR-PCI-MSI 1048576-edge      ehci_hcd:usb1, eth10\n" +
		" 60:          3          4\n" +
		"NMI:          0          0   Non-maskable interrupts\n" +
		"ERR:          0\n"
	got, err := parseInterrupts(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []interrupt{
		{0, "IO-APIC 2-edge timer"},
		{38, "PCI-MSIX-0000:00:03.0 1-edge virtio2-input.0"},
		{57, "IR-PCI-MSI 1048576-edge ehci_hcd:usb1, eth10"},
		{60, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got[1].name() != "virtio2-input.0" || got[3].name() != "" {
		t.Errorf("names %q %q", got[1].name(), got[3].name())
	}
	for _, tt := range []struct {
		desc, iface string
		want        bool
	}{
		{"PCI-MSI 1-edge eth1-TxRx-0", "eth1", true},
		{"PCI-MSI 1-edge eth1", "eth1", true},
		{"PCI-MSI 1-edge ehci_hcd:usb1, eth1", "eth1", true},
		{"PCI-MSI 1-edge eth1:rx", "eth1", true},
		{"PCI-MSI 1-edge eth10-TxRx-0", "eth1", false},
		{"PCI-MSI 1-edge veth1", "eth1", false},
	} {
		if got := (interrupt{desc: tt.desc}).names(tt.iface); got != tt.want {
			t.Errorf("names(%q) in %q = %v, want %v", tt.iface, tt.desc, got, tt.want)
		}
	}
	for _, bad := range []string{"", "garbage\n", "  CPU0 CPU1\n 5: 1 x y\n"} {
		if _, err := parseInterrupts(bad); err == nil {
			t.Errorf("parseInterrupts(%q) succeeded", bad)
		}
	}
}

func TestParseSwaps(t *testing.T) {
	text := "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" +
		"/dev/nvme0n1p3                          partition\t8388604\t\t10240\t\t-2\n" +
		"/dev/zram0                              partition\t4194300\t\t0\t\t100\n"
	got, err := parseSwaps(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []swapArea{
		{name: "/dev/nvme0n1p3", kind: "partition", sizeKiB: 8388604, usedKiB: 10240},
		{name: "/dev/zram0", kind: "partition", sizeKiB: 4194300, isRAMBased: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if areas, err := parseSwaps("Filename Type Size Used Priority\n"); err != nil || len(areas) != 0 {
		t.Errorf("header only: %v, %v", areas, err)
	}
	for _, bad := range []string{"", "/dev/sda2 partition 1 2 3\n", "Filename\n/dev/sda2 partition x 0 -2\n", "Filename\n/dev/sda2 partition\n"} {
		if _, err := parseSwaps(bad); err == nil {
			t.Errorf("parseSwaps(%q) succeeded", bad)
		}
	}
}

func TestParseCapEff(t *testing.T) {
	tests := []struct {
		status  string
		want    uint64
		wantErr bool
	}{
		{"Name:\tx\nCapPrm:\t0000000000000000\nCapEff:\t000001fffeffffff\n", 0x1fffeffffff, false},
		{"CapEff:\t0000000000800000\n", 1 << capSysNice, false},
		{"CapEff:\tzz\n", 0, true},
		{"Name:\tx\n", 0, true},
	}
	for _, tt := range tests {
		got, err := parseCapEff(tt.status)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseCapEff(%q) = %x, %v; want %x, error %v", tt.status, got, err, tt.want, tt.wantErr)
		}
	}
	if !hasCap(1<<capIPCLock, capIPCLock) || hasCap(1<<capIPCLock, capSysNice) {
		t.Error("hasCap: wrong bit")
	}
}

func TestParseLimit(t *testing.T) {
	limits := "" +
		"Limit                     Soft Limit           Hard Limit           Units     \n" +
		"Max locked memory         8388608              unlimited            bytes     \n" +
		"Max realtime priority     0                    99                   \n" +
		"Max realtime timeout      unlimited            unlimited            us        \n"
	tests := []struct {
		name    string
		want    limit
		wantErr bool
	}{
		{"Max locked memory", limit{soft: 8388608, hard: unlimited}, false},
		{"Max realtime priority", limit{soft: 0, hard: 99}, false},
		{"Max realtime timeout", limit{soft: unlimited, hard: unlimited}, false},
		{"Max realtime", limit{}, true}, // a prefix of a name is not the name
		{"Max open files", limit{}, true},
	}
	for _, tt := range tests {
		got, err := parseLimit(limits, tt.name)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseLimit(%q) = %+v, %v; want %+v, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
	if _, err := parseLimit("Max locked memory  lots  lots bytes\n", "Max locked memory"); err == nil {
		t.Error("non-numeric limit accepted")
	}
}

func TestParseCgroups(t *testing.T) {
	got, err := parseCgroups("12:cpu,cpuacct:/user.slice\n1:name=systemd:/init.scope\n0::/user.slice/session-4.scope\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []cgroupEntry{
		{controllers: []string{"cpu", "cpuacct"}, path: "/user.slice"},
		{controllers: []string{"name=systemd"}, path: "/init.scope"},
		{path: "/user.slice/session-4.scope"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := parseCgroups("garbage\n"); err == nil {
		t.Error("garbage accepted")
	}
}

func TestParseKeyFileBool(t *testing.T) {
	tests := []struct {
		text      string
		value, ok bool
	}{
		{"[device]\nmanaged=true\n", true, true},
		{"[device]\nmanaged=false\nnm-owned=true\n", false, true},
		{"[device]\nmanaged = 1\n", true, true},
		{"[other]\nmanaged=true\n[device]\nconnection-uuid=x\n", false, false},
		{"[device]\nmanaged=maybe\n", false, false},
		{"managed=true\n", false, false}, // outside any group
	}
	for _, tt := range tests {
		value, ok := parseKeyFileBool(tt.text, "device", "managed")
		if value != tt.value || ok != tt.ok {
			t.Errorf("parseKeyFileBool(%q) = %v, %v; want %v, %v", tt.text, value, ok, tt.value, tt.ok)
		}
	}
}

func TestKernelVersion(t *testing.T) {
	tests := []struct {
		version string
		rt      bool
		tail    string
	}{
		{"#1 SMP PREEMPT_RT Debian 6.1.76-1 (2024-02-01)", true, "#1 SMP PREEMPT_RT"},
		{"#1 SMP PREEMPT RT Fri Jan 1 00:00:00 UTC 2016", true, "#1 SMP PREEMPT RT"},
		{"#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)", false, "#1 SMP PREEMPT_DYNAMIC"},
		{"Linux version 6.8.0 (b@h) (gcc 13) #40-Ubuntu SMP PREEMPT_DYNAMIC Fri Jul  5 10:34:03 UTC 2024", false, "#40-Ubuntu SMP PREEMPT_DYNAMIC"},
	}
	for _, tt := range tests {
		if got := isRTVersion(tt.version); got != tt.rt {
			t.Errorf("isRTVersion(%q) = %v", tt.version, got)
		}
		if got := versionTail(tt.version); got != tt.tail {
			t.Errorf("versionTail(%q) = %q, want %q", tt.version, got, tt.tail)
		}
	}
}

func TestGrubFix(t *testing.T) {
	got := grubFix("intel_idle.max_cstate=0", "isolcpus=managed_irq,domain,3")
	want := `sudo sed -i -E -e 's/([" ])intel_idle\.max_cstate=[^ "]*/\1/g' -e 's/([" ])isolcpus=[^ "]*/\1/g' ` +
		`-e 's/^GRUB_CMDLINE_LINUX="/&intel_idle.max_cstate=0 isolcpus=managed_irq,domain,3 /' /etc/default/grub && sudo update-grub && sudo reboot`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestSmallFormatters(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{percent(950000, 1000000), "95"},
		{percent(333, 1000), "33.3"},
		{kibString(512), "512 KiB"},
		{kibString(8388604), "8.0 GiB"},
		{formatBytes(8388608), "8.0 MiB"},
		{formatBytes(unlimited), "unlimited"},
		{formatBytes(100), "100 B"},
		{formatLimit(99), "99"},
		{bounded([]string{"a", "b", "c"}, 2), "a, b and 1 more"},
		{bounded([]string{"a", "b"}, 2), "a, b"},
		{cpuFiles(cpuOf(3), "cpufreq/scaling_governor"), "/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if s := serviceDropIn("rtprio", "LimitRTPRIO=80"); !strings.Contains(s, `printf '[Service]\nLimitRTPRIO=80\n'`) || !strings.Contains(s, "ecagent.service.d/rtprio.conf") {
		t.Errorf("serviceDropIn = %s", s)
	}
}

func TestUnwrapAll(t *testing.T) {
	inner := errors.New("permission denied")
	if got := unwrapAll(fmt.Errorf("access /dev/x: %w", fmt.Errorf("op: %w", inner))); got != inner {
		t.Errorf("unwrapAll = %v, want the innermost error", got)
	}
}

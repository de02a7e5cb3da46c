package test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	unitFile       = "../deploy/systemd/ecagent.service"
	unitDropInDemo = "../deploy/systemd/examples/isolated-core.conf"
)

// unitSettings is a systemd unit file read as section.Key → values, in
// the order they appear (a key may repeat, e.g. Environment=).
type unitSettings map[string][]string

func readUnitSettings(t *testing.T, path string) unitSettings {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unitSettings{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: not a setting: %q", path, line)
			}
			key := section + "." + strings.TrimSpace(k)
			u[key] = append(u[key], strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// one returns the single value of key, failing when it is not set once.
func (u unitSettings) one(t *testing.T, key string) string {
	t.Helper()
	if len(u[key]) != 1 {
		t.Fatalf("unit: want exactly one %s=, have %q", key, u[key])
	}
	return u[key][0]
}

// environment returns the unit's Environment= variables.
func (u unitSettings) environment() map[string]string {
	env := map[string]string{}
	for _, v := range u["Service.Environment"] {
		for _, kv := range strings.Fields(v) {
			if k, val, ok := strings.Cut(kv, "="); ok {
				env[k] = val
			}
		}
	}
	return env
}

// systemdWarning matches what systemd prints about a unit it loads anyway:
// unknown keys and sections, values it cannot parse ("..., ignoring").
var systemdWarning = regexp.MustCompile(`(?i)unknown|ignoring|\.(service|conf):\d+:`)

// TestUnitVerifies runs `systemd-analyze verify` on the unit, alone and
// with the example drop-in, and fails on any warning: verify exits 0 on
// unknown or unparsable settings and only prints them.
func TestUnitVerifies(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("needs systemd-analyze (Debian package systemd)")
	}
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	u := readUnitSettings(t, unitFile)
	exe := strings.Fields(u.one(t, "Service.ExecStart"))[0]
	// verify checks that ExecStart= names an executable: point it at the
	// binary the unit would run.
	bin := ecagentBinary(t)
	demo, err := os.ReadFile(unitDropInDemo)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		dropIns  map[string]string // file name → content
		wantWarn bool
	}{
		{"unit", nil, false},
		{"unit+isolated-core", map[string]string{filepath.Base(unitDropInDemo): string(demo)}, false},
		// The control: a misspelt key must be caught, or the check is blind.
		{"misspelt key", map[string]string{"typo.conf": "[Service]\nAmbientCapabilites=CAP_NET_RAW\n"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ecagent.service")
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), exe, bin)), 0o644); err != nil {
				t.Fatal(err)
			}
			for name, content := range tc.dropIns {
				if err := os.MkdirAll(path+".d", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(path+".d", name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("systemd-analyze", "verify", path)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("systemd-analyze verify: %v\n%s", err, out)
			}
			var warnings []string
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if systemdWarning.MatchString(line) {
					warnings = append(warnings, line)
				} else if line != "" {
					t.Logf("systemd-analyze verify: %s", line)
				}
			}
			switch {
			case tc.wantWarn && len(warnings) == 0:
				t.Errorf("systemd-analyze verify did not warn about a misspelt key:\n%s", out)
			case !tc.wantWarn && len(warnings) > 0:
				t.Errorf("systemd-analyze verify warns:\n%s", strings.Join(warnings, "\n"))
			}
		})
	}
}

// TestUnitPolicy pins the decisions the unit documents, so that an edit
// that undoes one fails here with the reason.
func TestUnitPolicy(t *testing.T) {
	u := readUnitSettings(t, unitFile)
	caps := "CAP_NET_RAW CAP_SYS_NICE CAP_IPC_LOCK"
	env := u.environment()
	for _, tc := range []struct {
		key, want, why string
	}{
		{"Service.Type", "notify", "the agent reports READY=1 once the cycle runs"},
		{"Service.NotifyAccess", "main", "only the agent notifies, not the cycle process"},
		{"Service.Restart", "on-failure", "the issue asks for it"},
		{"Service.KillMode", "process", "the cycle process must survive an agent crash (see the unit's comment)"},
		{"Service.User", "ecagent", "a dedicated user, not root"},
		{"Service.AmbientCapabilities", caps, "exactly the capabilities the cycle needs"},
		{"Service.CapabilityBoundingSet", caps, "no way to gain any other capability"},
		{"Service.NoNewPrivileges", "yes", "no setuid escalation"},
		{"Service.LimitMEMLOCK", "infinity", "mlockall of the whole process"},
		{"Service.LimitRTPRIO", "99", "SCHED_FIFO even without CAP_SYS_NICE"},
		{"Service.RestrictRealtime", "no", "SCHED_FIFO must stay allowed"},
		{"Service.RuntimeDirectory", "ecagent", "the segment lives in /run/ecagent"},
		{"Service.RuntimeDirectoryPreserve", "yes", "removing it would orphan a running cycle"},
		{"Service.ProtectSystem", "strict", "hardening"},
		{"Service.ProtectHome", "yes", "hardening"},
		{"Service.PrivateTmp", "yes", "hardening"},
	} {
		if got := u.one(t, tc.key); got != tc.want {
			t.Errorf("%s=%s, want %s: %s", tc.key, got, tc.want, tc.why)
		}
	}
	if w := u.one(t, "Service.WatchdogSec"); w == "" || w == "0" || w == "infinity" {
		t.Errorf("WatchdogSec=%s: the watchdog must be on", w)
	}
	families := strings.Fields(u.one(t, "Service.RestrictAddressFamilies"))
	for _, f := range []string{"AF_PACKET", "AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK"} {
		if !contains(families, f) {
			t.Errorf("RestrictAddressFamilies lacks %s", f)
		}
	}
	if shm := env["ECAGENT_CYCLE_SHM"]; !strings.HasPrefix(shm, "/run/"+u.one(t, "Service.RuntimeDirectory")+"/") {
		t.Errorf("ECAGENT_CYCLE_SHM=%q is not in the unit's RuntimeDirectory", shm)
	}
	if !strings.Contains(u.one(t, "Service.ExecStart"), "/etc/ecagent/") || u.one(t, "Service.ConfigurationDirectory") != "ecagent" {
		t.Errorf("the configuration must come from /etc/ecagent/")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSysusersCreatesTheUnitsUser applies ecagent.sysusers to an empty
// root and checks it creates the user and group the unit runs as (and the
// udev rule grants /dev/cpu_dma_latency to), without a login shell.
func TestSysusersCreatesTheUnitsUser(t *testing.T) {
	if _, err := exec.LookPath("systemd-sysusers"); err != nil {
		t.Skip("needs systemd-sysusers (Debian package systemd)")
	}
	u := readUnitSettings(t, unitFile)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf, err := filepath.Abs("../deploy/systemd/ecagent.sysusers")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-sysusers", "--root="+root, conf).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	passwd, _ := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	group, _ := os.ReadFile(filepath.Join(root, "etc", "group"))
	user, grp := u.one(t, "Service.User"), u.one(t, "Service.Group")
	var entry []string
	for _, line := range strings.Split(string(passwd), "\n") {
		if f := strings.Split(line, ":"); f[0] == user {
			entry = f
		}
	}
	if len(entry) != 7 || entry[2] == "0" || !strings.HasSuffix(entry[6], "nologin") {
		t.Errorf("user %s in passwd: %q", user, entry)
	}
	if !strings.Contains(string(group), grp+":") {
		t.Errorf("group %s missing:\n%s", grp, group)
	}
	rules, err := os.ReadFile("../deploy/systemd/60-ecagent-cpu-dma-latency.rules")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rules), `KERNEL=="cpu_dma_latency", GROUP="`+grp+`"`) {
		t.Errorf("the udev rule does not give /dev/cpu_dma_latency to group %s", grp)
	}
}

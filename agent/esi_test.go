package agent

import (
	"io"
	"log/slog"
	"testing"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/mqtt"
	"github.com/ecagent/ecagent/contract"
)

// TestESINamesReachMQTT: with bus.esi, a slave whose SII names nothing
// (the cycle process names its entries by index) is published under the
// ESI's order code and entry names, with the ESI's data types (an INT is
// a signed value) and units.
func TestESINamesReachMQTT(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config.Default()
	cfg.Bus.ESI = []string{"../testdata/esi"}
	names := loadESINames(cfg, log)
	if names == nil || names.Devices() != 2 {
		t.Fatalf("catalogue %v", names)
	}
	info := &contract.BusInfo{InputBytes: 8, Slaves: []contract.SlaveInfo{{
		Position: 0, VendorID: 0x00ECA901, ProductCode: 0x0C1E0EA1, Revision: 0x00110000, InputBits: 64,
		Signals: []contract.SignalInfo{
			{PDO: 0x1A00, Index: 0x6000, SubIndex: 0x11, Bits: 16, Offset: 16, Name: "0x6000:11"},
			{PDO: 0x1A01, Index: 0x6010, SubIndex: 0x11, Bits: 16, Offset: 48, Name: "0x6010:11"},
		},
	}}}
	annotate(names, info, log)
	model, problems := mqtt.NewModel(mqttBus(info), mqtt.Rules{})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	d := model.Devices[0]
	if d.Name != "EA3102-0" || len(d.Signals) != 2 {
		t.Fatalf("device %q with %d signals", d.Name, len(d.Signals))
	}
	for i, want := range []string{"ai_standard_channel_1.value", "ai_standard_channel_2.value"} {
		s := d.Signals[i]
		if s.Name != want || s.Unit != "mV" || s.Type != mqtt.TypeInt || !s.Signed {
			t.Errorf("signal %d: %q unit %q type %v signed %v; want %q in mV, a signed int", i, s.Name, s.Unit, s.Type, s.Signed, want)
		}
	}
	// Without bus.esi nothing changes: the index names stay.
	cfg.Bus.ESI = nil
	if loadESINames(cfg, log) != nil {
		t.Error("a catalogue without bus.esi")
	}
}

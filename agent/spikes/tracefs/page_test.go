package tracefs

import (
	"encoding/binary"
	"testing"
)

// TestRecordsDecodesEveryHeaderType builds a page the way the kernel's
// ring buffer writes one — a small record, a time extend, a record with
// its length in a word of its own, a padding record, an absolute time
// stamp — and checks each data record comes out with its time.
func TestRecordsDecodesEveryHeaderType(t *testing.T) {
	var data []byte
	word := func(v uint32) { data = binary.LittleEndian.AppendUint32(data, v) }
	hdr := func(typeLen, delta uint32) { word(typeLen | delta<<5) }
	hdr(2, 10) // 8 bytes of data at base+10
	word(0x11111111)
	word(0x22222222)
	hdr(typeTimeExtend, 5) // +(3<<27 | 5)
	word(3)
	hdr(0, 7) // length word: 4 + 12 bytes
	word(16)
	word(1)
	word(2)
	word(3)
	hdr(typePadding, 1)
	word(12) // 16 bytes in all
	word(0)
	word(0)
	hdr(typeTimeStamp, 9) // absolute (1<<27 | 9)
	word(1)
	hdr(1, 1)
	word(0x33333333)
	page := make([]byte, 16, 4096)
	const base = 1_000_000
	binary.LittleEndian.PutUint64(page, base)
	binary.LittleEndian.PutUint64(page[8:], uint64(len(data))|missedEvents)
	page = append(page, data...)

	type rec struct {
		ts uint64
		n  int
	}
	var got []rec
	if err := DefaultPageLayout.Records(page, func(ts uint64, r []byte) { got = append(got, rec{ts, len(r)}) }); err != nil {
		t.Fatal(err)
	}
	if _, missed := DefaultPageLayout.Missed(page); !missed {
		t.Error("Missed = false, want true (missed-events flag set)")
	}
	for _, c := range []struct {
		name  string
		flags uint64
		want  bool
	}{{"missed events", missedEvents, true}, {"missed and stored", missedEvents | missedStored, true}, {"none", 0, false}} {
		binary.LittleEndian.PutUint64(page[8:], uint64(len(data))|c.flags)
		if ts, missed := DefaultPageLayout.Missed(page); ts != base || missed != c.want {
			t.Errorf("%s: Missed = %d, %v; want %d, %v", c.name, ts, missed, base, c.want)
		}
	}
	if _, missed := DefaultPageLayout.Missed(page[:10]); missed {
		t.Error("a page shorter than its header: missed")
	}
	t1 := uint64(base + 10)
	t2 := t1 + (3<<27 | 5) + 7
	t3 := uint64(1<<27|9) + 1
	want := []rec{{t1, 8}, {t2, 12}, {t3, 4}}
	if len(got) != len(want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if err := DefaultPageLayout.Records(page[:20], func(uint64, []byte) {}); err == nil {
		t.Error("a page cut short: no error")
	}
}

// TestParseFormat reads sched_switch's format as this kernel (6.18)
// writes it, and a __data_loc field.
func TestParseFormat(t *testing.T) {
	const text = `name: irq_handler_entry
ID: 152
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int irq;	offset:8;	size:4;	signed:1;
	field:__data_loc char[] name;	offset:12;	size:4;	signed:0;

print fmt: "irq=%d name=%s", REC->irq, __get_str(name)
`
	f, err := ParseFormat("irq", "irq_handler_entry", text)
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != 152 || len(f.Fields) != 4 {
		t.Fatalf("ID %d, %d fields", f.ID, len(f.Fields))
	}
	name, ok := f.Field("name")
	if !ok || !name.DataLoc || name.Offset != 12 {
		t.Fatalf("name field %+v", name)
	}
	irq, _ := f.Field("irq")
	rec := make([]byte, 16, 32)
	binary.LittleEndian.PutUint32(rec[8:], uint32(0xffffffff))
	binary.LittleEndian.PutUint32(rec[12:], uint32(16)|uint32(5)<<16)
	rec = append(rec, "eth0\x00"...)
	if v := irq.Int(rec); v != -1 {
		t.Errorf("irq = %d, want -1", v)
	}
	if s := string(name.Bytes(rec)); s != "eth0" {
		t.Errorf("name = %q, want eth0", s)
	}
	if _, err := ParseFormat("x", "y", "format:\n"); err == nil {
		t.Error("no ID: no error")
	}
}

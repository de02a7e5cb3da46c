package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ecagent/ecagent/internal/testsupport"
)

func TestLayoutValidate(t *testing.T) {
	ok := smallLayout()
	tests := []struct {
		name   string
		modify func(*Layout)
		field  string // in the error; "" when valid
	}{
		{"small", func(*Layout) {}, ""},
		{"default", func(l *Layout) { *l = DefaultLayout() }, ""},
		{"one slot rings, no image", func(l *Layout) { *l = Layout{SampleSlots: 1, CommandSlots: 1, EventSlots: 1} }, ""},
		{"max", func(l *Layout) { l.SampleSlots, l.ImageBytes = MaxSlots, MaxImageBytes }, ""},
		{"samples not power of two", func(l *Layout) { l.SampleSlots = 1000 }, "SampleSlots"},
		{"samples zero", func(l *Layout) { l.SampleSlots = 0 }, "SampleSlots"},
		{"samples too many", func(l *Layout) { l.SampleSlots = 2 * MaxSlots }, "SampleSlots"},
		{"commands negative", func(l *Layout) { l.CommandSlots = -4 }, "CommandSlots"},
		{"events not power of two", func(l *Layout) { l.EventSlots = 3 }, "EventSlots"},
		{"image negative", func(l *Layout) { l.ImageBytes = -1 }, "ImageBytes"},
		{"image too big", func(l *Layout) { l.ImageBytes = MaxImageBytes + 1 }, "ImageBytes"},
		{"period negative", func(l *Layout) { l.Period = -time.Millisecond }, "Period"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ok
			tt.modify(&l)
			err := l.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", l, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidLayout) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Validate(%+v) = %v, want ErrInvalidLayout naming %s", l, err, tt.field)
			}
			if _, err := New(l); !errors.Is(err, ErrInvalidLayout) {
				t.Errorf("New(%+v) = %v, want ErrInvalidLayout", l, err)
			}
		})
	}
}

// TestPlanRegions checks that regions are aligned, disjoint, in order and
// inside the segment for a range of layouts.
func TestPlanRegions(t *testing.T) {
	layouts := []Layout{
		smallLayout(),
		DefaultLayout(),
		{SampleSlots: 1, CommandSlots: 1, EventSlots: 1},
		{SampleSlots: 2, ImageBytes: 1, CommandSlots: 2, EventSlots: 2},
		{SampleSlots: MaxSlots, ImageBytes: MaxImageBytes, CommandSlots: MaxSlots, EventSlots: MaxSlots},
	}
	for _, l := range layouts {
		p, err := planFor(l)
		if err != nil {
			t.Fatalf("planFor(%+v): %v", l, err)
		}
		type region struct {
			name        string
			offset, end uint64
			need        uint64 // bytes the contents take
		}
		regions := []region{
			{"samples", p.samples.offset, p.samples.offset + p.samples.size(), ringControlSize + uint64(l.SampleSlots)*SampleSize},
			{"events", p.events.offset, p.events.offset + p.events.size(), ringControlSize + uint64(l.EventSlots)*EventSize},
			{"commands", p.commands.offset, p.commands.offset + p.commands.size(), ringControlSize + uint64(l.CommandSlots)*CommandSize},
			{"image", p.image.offset, p.image.offset + p.image.size(), imageControlSize + uint64(l.ImageBytes)},
		}
		prevEnd := uint64(headerSize)
		for _, r := range regions {
			if r.offset%regionAlign != 0 {
				t.Errorf("%+v: %s at %d, not %d-aligned", l, r.name, r.offset, regionAlign)
			}
			if r.offset < prevEnd {
				t.Errorf("%+v: %s at %d overlaps the region ending at %d", l, r.name, r.offset, prevEnd)
			}
			if r.end-r.offset < r.need {
				t.Errorf("%+v: %s has %d bytes, needs %d", l, r.name, r.end-r.offset, r.need)
			}
			prevEnd = r.end
		}
		if p.total < prevEnd || p.total%sizeAlign != 0 {
			t.Errorf("%+v: total %d, want a multiple of %d ≥ %d", l, p.total, sizeAlign, prevEnd)
		}
	}
}

// TestLayoutAgreement creates a segment with one layout, attaches to it
// as another process would, and checks that both sides see every offset,
// capacity and identity field alike.
func TestLayoutAgreement(t *testing.T) {
	l := Layout{SampleSlots: 64, ImageBytes: 333, CommandSlots: 16, EventSlots: 32, Period: 250 * time.Microsecond}
	owner, path := newFileSegment(t, l)
	want, err := planFor(l)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Attach(path)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	defer other.Close()

	h := at[header](other.mem, 0)
	got := []struct {
		field     string
		got, want uint64
	}{
		{"version", uint64(h.Version), uint64(LayoutVersion)},
		{"header size", uint64(h.HeaderSize), headerSize},
		{"total size", h.TotalSize, want.total},
		{"period", uint64(h.PeriodNanos), uint64(l.Period)},
		{"samples offset", h.Samples.Offset, want.samples.offset},
		{"samples capacity", uint64(h.Samples.Capacity), uint64(l.SampleSlots)},
		{"samples record size", uint64(h.Samples.RecordSize), SampleSize},
		{"events offset", h.Events.Offset, want.events.offset},
		{"events capacity", uint64(h.Events.Capacity), uint64(l.EventSlots)},
		{"events record size", uint64(h.Events.RecordSize), EventSize},
		{"commands offset", h.Commands.Offset, want.commands.offset},
		{"commands capacity", uint64(h.Commands.Capacity), uint64(l.CommandSlots)},
		{"commands record size", uint64(h.Commands.RecordSize), CommandSize},
		{"image offset", h.Image.Offset, want.image.offset},
		{"image capacity", uint64(h.Image.Capacity), uint64(l.ImageBytes)},
		{"file size", uint64(len(other.mem)), want.total},
	}
	for _, g := range got {
		if g.got != g.want {
			t.Errorf("attached header %s = %d, want %d", g.field, g.got, g.want)
		}
	}
	oi, ai := owner.Info(), other.Info()
	if oi != ai {
		t.Errorf("owner Info %+v, attached Info %+v", oi, ai)
	}
	if ai.Layout != l || ai.CreatorPID != os.Getpid() || ai.Version != LayoutVersion || ai.Nonce == 0 {
		t.Errorf("Info = %+v, want layout %+v, creator %d, version %d and a nonce", ai, l, os.Getpid(), LayoutVersion)
	}
	if time.Since(ai.Created) > time.Minute || time.Since(ai.Created) < 0 {
		t.Errorf("Info.Created = %v, want about now", ai.Created)
	}
	caps := []struct {
		name      string
		got, want int
	}{
		{"samples", other.Samples().Cap(), l.SampleSlots},
		{"events", other.Events().Cap(), l.EventSlots},
		{"commands", other.Commands().Cap(), l.CommandSlots},
		{"image", other.Image().Cap(), l.ImageBytes},
	}
	for _, c := range caps {
		if c.got != c.want {
			t.Errorf("attached %s capacity %d, want %d", c.name, c.got, c.want)
		}
	}
	// The same regions: what one side writes, the other reads.
	owner.Samples().Push(&Sample{Cycle: 7})
	owner.Events().Push(&Event{Cycle: 8})
	owner.Commands().Push(&Command{Seq: 9})
	owner.Image().Publish([]byte("abc"), 10)
	owner.Heartbeat().Beat(11, 12)
	var s Sample
	var e Event
	var c Command
	img := make([]byte, 3)
	if !other.Samples().Next(&s) || s.Cycle != 7 {
		t.Errorf("attached sample = %+v, want cycle 7", s)
	}
	if !other.Events().Next(&e) || e.Cycle != 8 {
		t.Errorf("attached event = %+v, want cycle 8", e)
	}
	if !other.Commands().Next(&c) || c.Seq != 9 {
		t.Errorf("attached command = %+v, want seq 9", c)
	}
	if cyc, ok := other.Image().Snapshot(img); !ok || cyc != 10 || string(img) != "abc" {
		t.Errorf("attached snapshot = %q, %d, %v, want abc, 10, true", img, cyc, ok)
	}
	if cyc, mono, ok := other.Heartbeat().Read(); !ok || cyc != 11 || mono != 12 {
		t.Errorf("attached heartbeat = %d, %d, %v, want 11, 12, true", cyc, mono, ok)
	}
}

// TestGoldenLayout pins the byte layout of the header, the control blocks
// and the records, and the offsets computed for two layouts. A change to
// any of them must come with a LayoutVersion bump: the golden file is
// named after the version and -update only writes a missing one.
func TestGoldenLayout(t *testing.T) {
	got := describeLayout(t)
	path := filepath.Join("testdata", fmt.Sprintf("layout-v%d.golden", LayoutVersion))
	want, same := testsupport.GoldenOnce(t, path, []byte(got))
	if !same {
		t.Fatalf("the segment layout changed, but LayoutVersion is still %d.\n"+
			"Bump LayoutVersion in layout.go and run go test -run TestGoldenLayout -update "+
			"to write %s; an old binary must not attach to a new segment.\n--- %s\n%s\n--- now\n%s",
			LayoutVersion, filepath.Join("testdata", fmt.Sprintf("layout-v%d.golden", LayoutVersion+1)), path, want, got)
	}
}

// describeLayout renders everything that makes up the segment layout.
func describeLayout(t *testing.T) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# ecagent shared-memory layout, version %d\n", LayoutVersion)
	fmt.Fprintf(&b, "magic %q\n", magic[:])
	fmt.Fprintf(&b, "headerSize %d heartbeatOffset %d regionAlign %d ringControlSize %d imageControlSize %d sizeAlign %d\n",
		headerSize, heartbeatOffset, regionAlign, ringControlSize, imageControlSize, sizeAlign)
	fmt.Fprintf(&b, "SampleSize %d CommandSize %d EventSize %d EventTextSize %d\n", SampleSize, CommandSize, EventSize, EventTextSize)
	types := []reflect.Type{
		reflect.TypeFor[header](), reflect.TypeFor[ringDesc](), reflect.TypeFor[imageDesc](),
		reflect.TypeFor[heartbeatLine](), reflect.TypeFor[ringControl](), reflect.TypeFor[imageControl](),
		reflect.TypeFor[Sample](), reflect.TypeFor[Command](), reflect.TypeFor[Event](),
	}
	for _, typ := range types {
		fmt.Fprintf(&b, "\n%s size %d\n", typ.Name(), typ.Size())
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := f.Type.String()
			if f.Type == reflect.TypeFor[EventKind]() {
				// contract.EventKind, which shm names EventKind (an
				// alias): the layout names it as it always has.
				name = "shm.EventKind"
			}
			fmt.Fprintf(&b, "  %-16s %4d %4d %s\n", f.Name, f.Offset, f.Type.Size(), name)
		}
	}
	for _, l := range []Layout{smallLayout(), DefaultLayout()} {
		p, err := planFor(l)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\nplan for %+v\n", l)
		fmt.Fprintf(&b, "  samples  %d (%d×%d) records at %d\n", p.samples.offset, p.samples.capacity, p.samples.recordSize, p.samples.recordsOffset())
		fmt.Fprintf(&b, "  events   %d (%d×%d) records at %d\n", p.events.offset, p.events.capacity, p.events.recordSize, p.events.recordsOffset())
		fmt.Fprintf(&b, "  commands %d (%d×%d) records at %d\n", p.commands.offset, p.commands.capacity, p.commands.recordSize, p.commands.recordsOffset())
		fmt.Fprintf(&b, "  image    %d (%d bytes) data at %d\n", p.image.offset, p.image.capacity, p.image.dataOffset())
		fmt.Fprintf(&b, "  total    %d\n", p.total)
	}
	return b.String()
}

// TestHeaderFieldOffsets pins the header offsets doc.go documents, in
// case the golden file is regenerated carelessly.
func TestHeaderFieldOffsets(t *testing.T) {
	var h header
	var hb heartbeatLine
	tests := []struct {
		field     string
		got, want uintptr
	}{
		{"Magic", unsafe.Offsetof(h.Magic), 0},
		{"Version", unsafe.Offsetof(h.Version), 8},
		{"HeaderSize", unsafe.Offsetof(h.HeaderSize), 12},
		{"TotalSize", unsafe.Offsetof(h.TotalSize), 16},
		{"PeriodNanos", unsafe.Offsetof(h.PeriodNanos), 24},
		{"CreatorPID", unsafe.Offsetof(h.CreatorPID), 32},
		{"Nonce", unsafe.Offsetof(h.Nonce), 40},
		{"BootID", unsafe.Offsetof(h.BootID), 48},
		{"CreatedUnixNanos", unsafe.Offsetof(h.CreatedUnixNanos), 64},
		{"Samples", unsafe.Offsetof(h.Samples), 72},
		{"Events", unsafe.Offsetof(h.Events), 88},
		{"Commands", unsafe.Offsetof(h.Commands), 104},
		{"Image", unsafe.Offsetof(h.Image), 120},
		{"heartbeat Seq", heartbeatOffset + unsafe.Offsetof(hb.Seq), 256},
		{"heartbeat Cycle", heartbeatOffset + unsafe.Offsetof(hb.Cycle), 264},
		{"heartbeat Mono", heartbeatOffset + unsafe.Offsetof(hb.Mono), 272},
		{"heartbeat CyclePID", heartbeatOffset + unsafe.Offsetof(hb.CyclePID), 280},
		{"heartbeat FramesSent", heartbeatOffset + unsafe.Offsetof(hb.FramesSent), 288},
		{"heartbeat FramesLost", heartbeatOffset + unsafe.Offsetof(hb.FramesLost), 296},
		{"heartbeat FramesLate", heartbeatOffset + unsafe.Offsetof(hb.FramesLate), 304},
		{"heartbeat LinkReceived", heartbeatOffset + unsafe.Offsetof(hb.LinkReceived), 312},
		{"heartbeat LinkDrops", heartbeatOffset + unsafe.Offsetof(hb.LinkDrops), 320},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("header %s at %d, want %d", tt.field, tt.got, tt.want)
		}
	}
}

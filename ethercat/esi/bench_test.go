package esi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// catalogue builds a synthetic vendor catalogue of at least size bytes:
// the EL3102 of the test data (a device with a dictionary, about 45 KB of
// XML) repeated with product codes 1, 2, 3…
func catalogue(tb testing.TB, size int) ([]byte, int) {
	tb.Helper()
	src, err := os.ReadFile("testdata/beckhoff/Beckhoff EL3xxx.xml")
	if err != nil {
		tb.Fatal(err)
	}
	s := string(src)
	i, j := strings.Index(s, "<Device "), strings.LastIndex(s, "</Device>")+len("</Device>")
	head, dev, tail := s[:i], s[i:j], s[j:]
	var b bytes.Buffer
	b.Grow(size + len(dev))
	b.WriteString(head)
	n := 0
	for b.Len() < size {
		n++
		b.WriteString(strings.Replace(dev, `ProductCode="#x0c1e3052"`, fmt.Sprintf(`ProductCode="#x%08x"`, n), 1))
		b.WriteString("\n\t\t\t")
	}
	b.WriteString(tail)
	return b.Bytes(), n
}

// catalogueFile writes a catalogue of at least size bytes to a file, so
// that scanning it holds none of it in the heap.
func catalogueFile(tb testing.TB, size int) (string, int, int) {
	tb.Helper()
	doc, n := catalogue(tb, size)
	path := filepath.Join(tb.TempDir(), "catalogue.xml")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path, len(doc), n
}

// heapPeaks scans the file at path and samples the heap every 50
// devices: the heap in use as the GC paces it (garbage included) and the
// live heap (after a collection). It returns the devices scanned.
func heapPeaks(tb testing.TB, path string, live bool) (inuse, alive uint64, devices int) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	var ms runtime.MemStats
	_, err = Scan(f, path, Options{}, func(_ *File, d *Device) error {
		if devices++; devices%50 != 0 {
			return nil
		}
		runtime.ReadMemStats(&ms)
		inuse = max(inuse, ms.HeapInuse)
		if live {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			alive = max(alive, ms.HeapAlloc)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return inuse, alive, devices
}

// TestScanMemoryIsBounded scans a 50 MB catalogue from a file and checks
// that the live heap stays that of a device or two, whatever the file's
// size.
func TestScanMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 50 MB file")
	}
	path, size, n := catalogueFile(t, 50<<20)
	inuse, alive, devices := heapPeaks(t, path, true)
	if devices != n {
		t.Fatalf("%d devices scanned of %d", devices, n)
	}
	if alive > 8<<20 {
		t.Errorf("live heap up to %d KB while scanning a %d MB file: want it bounded by a device's", alive>>10, size>>20)
	}
	t.Logf("%d devices, %d MB file: live heap at most %d KB, heap in use at most %d KB", n, size>>20, alive>>10, inuse>>10)
}

// BenchmarkScan streams a 50 MB catalogue from a file: throughput, bytes
// allocated per MB of XML, and the peak heap in use (garbage included, as
// the GC paces it).
func BenchmarkScan(b *testing.B) {
	path, size, _ := catalogueFile(b, 50<<20)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		inuse, _, _ := heapPeaks(b, path, false)
		peak = max(peak, inuse)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-inuse-MB")
}

// heldBy returns the heap the value build returns holds, measured
// between collections.
func heldBy(build func() any) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// BenchmarkCatalog indexes a 50 MB catalogue file: throughput, and the
// heap the index holds per MB of XML.
func BenchmarkCatalog(b *testing.B) {
	path, size, _ := catalogueFile(b, 50<<20)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var held int64
	for b.Loop() {
		held = heldBy(func() any {
			c := NewCatalog(Options{})
			if err := c.AddFile(path); err != nil {
				b.Fatal(err)
			}
			return c
		})
	}
	b.ReportMetric(float64(held)/float64(size)*(1<<20), "held-bytes-per-MB")
}

// BenchmarkCatalogLookup reads a device again from the middle of a 50 MB
// catalogue file (a new catalogue each time, so nothing is kept).
func BenchmarkCatalogLookup(b *testing.B) {
	path, _, n := catalogueFile(b, 50<<20)
	c := NewCatalog(Options{})
	if err := c.AddFile(path); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		e := c.byProduct[[2]uint32{2, uint32(n / 2)}][0]
		e.dev = nil
		if _, err := c.Lookup(2, uint32(n/2), 0x00140000); err != nil {
			b.Fatal(err)
		}
	}
}

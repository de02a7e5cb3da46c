package eni

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// bigENI is an ENI of n slaves: the default segment's EL4132 (a mailbox
// slave with init commands, about 11 KB of XML) at positions 0…n-1.
func bigENI(tb testing.TB, n int) []byte {
	tb.Helper()
	src, err := os.ReadFile("testdata/default-segment.xml")
	if err != nil {
		tb.Fatal(err)
	}
	s := string(src)
	i := strings.Index(s, "<Slave>")
	j := strings.Index(s, "<Cyclic>")
	k := strings.Index(s, "<Name><![CDATA[Term 6 (EL4132)")
	start := strings.LastIndex(s[:k], "<Slave>")
	end := strings.Index(s[k:], "</Slave>") + k + len("</Slave>")
	slave := s[start:end]
	var b bytes.Buffer
	b.WriteString(s[:i])
	for p := range n {
		x := strings.ReplaceAll(slave, "<PhysAddr>1006</PhysAddr>", fmt.Sprintf("<PhysAddr>%d</PhysAddr>", 1001+p))
		x = strings.Replace(x, "<AutoIncAddr>65531</AutoIncAddr>", fmt.Sprintf("<AutoIncAddr>%d</AutoIncAddr>", uint16(-p)), 1)
		b.WriteString(x)
	}
	b.WriteString(s[j:])
	return b.Bytes()
}

// BenchmarkRead reads an ENI of 1000 mailbox slaves (about 11 MB).
func BenchmarkRead(b *testing.B) {
	doc := bigENI(b, 1000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := Read(bytes.NewReader(doc), "big.xml", Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Slaves) != 1000 {
			b.Fatalf("%d slaves", len(c.Slaves))
		}
	}
}

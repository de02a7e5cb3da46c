package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ecagent/ecagent/agent/eniconfig"
	"github.com/ecagent/ecagent/cycle/maintenance"
	"github.com/ecagent/ecagent/ethercat/bitfield"
)

// eniData is `ecagent data --eni FILE`: the process image in the ENI's
// layout, where the ENI's variable offsets hold, and each variable with
// its value and where it lies in ecagent's own image.
type eniData struct {
	File      string               `json:"file"`
	Cycle     uint64               `json:"cycle"`
	Outputs   maintenance.HexBytes `json:"outputs"` // the ENI's Outputs image
	Inputs    maintenance.HexBytes `json:"inputs"`  // the ENI's Inputs image
	Variables []eniDataVariable    `json:"variables"`
}

// eniDataVariable is one variable of the ENI's process image.
type eniDataVariable struct {
	Name      string `json:"name"`
	DataType  string `json:"datatype"`
	Direction string `json:"direction"`
	Bits      uint32 `json:"bits"`
	// ENIBitOffset is its place in the ENI's Inputs or Outputs image;
	// BitOffset its place in ecagent's image (outputs, then inputs), -1
	// when the slave maps no such entry.
	ENIBitOffset uint32 `json:"eni_bit_offset"`
	BitOffset    int    `json:"bit_offset"`
	// Value is the raw value, little-endian, for up to 64 bits.
	Value uint64 `json:"value"`
}

// eniDataCommand answers data --eni: it reads the image and the PDO
// layout and lays the image out as the ENI does.
func eniDataCommand(ctx context.Context, e *env, c ctlFlags, file string) error {
	cfg, r, err := eniconfig.Read(file)
	if err != nil {
		return fmt.Errorf("data --eni: %w", err)
	}
	var img maintenance.DataResult
	var pdos maintenance.PDOsResult
	if err := c.call(ctx, e, "data", []maintenance.Request{{Op: maintenance.OpData}, {Op: maintenance.OpPDOs}}, &img, &pdos); err != nil {
		return err
	}
	d := eniData{File: file, Cycle: img.Cycle}
	if pi := cfg.ProcessImage; pi != nil {
		d.Outputs, d.Inputs = make([]byte, pi.Outputs.ByteSize), make([]byte, pi.Inputs.ByteSize)
	}
	for _, v := range r.Variables {
		dv := eniDataVariable{Name: v.Name, DataType: v.DataType, Direction: "input", Bits: v.BitSize, ENIBitOffset: v.BitOffs,
			BitOffset: entryOffset(pdos, v)}
		dst := d.Inputs
		if v.Output {
			dv.Direction, dst = "output", d.Outputs
		}
		if dv.BitOffset >= 0 {
			bitfield.Copy(dst, int(v.BitOffs), img.Image, dv.BitOffset, int(v.BitSize))
			dv.Value = bitfield.Value(img.Image, dv.BitOffset, int(v.BitSize))
		}
		d.Variables = append(d.Variables, dv)
	}
	return c.print(e.stdout, &d, func(w io.Writer) { printENIData(w, d) })
}

// entryOffset finds the variable's PDO entry in ecagent's image: its bit
// offset from the image's start, or -1.
func entryOffset(pdos maintenance.PDOsResult, v eniconfig.Variable) int {
	for _, s := range pdos.Slaves {
		if s.Position != v.Slave {
			continue
		}
		list := s.TxPDOs
		if v.Output {
			list = s.RxPDOs
		}
		for _, p := range list {
			for _, en := range p.Entries {
				if en.Index == v.Index && en.SubIndex == v.SubIndex {
					return en.Offset
				}
			}
		}
	}
	return -1
}

// printENIData prints the ENI's images as hex dumps with offsets in the
// ENI's images, then the variables.
func printENIData(w io.Writer, d eniData) {
	fmt.Fprintf(w, "Process image in the layout of %s", d.File)
	if d.Cycle != 0 {
		fmt.Fprintf(w, " (cycle %d)", d.Cycle)
	}
	fmt.Fprintln(w)
	for _, im := range []struct {
		title string
		b     []byte
	}{{"Outputs", d.Outputs}, {"Inputs", d.Inputs}} {
		fmt.Fprintf(w, "%s (%d bytes):\n", im.title, len(im.b))
		for off := 0; off < len(im.b); off += 16 {
			fmt.Fprintf(w, "  0x%04x: % x\n", off, im.b[off:min(off+16, len(im.b))])
		}
	}
	width := 0
	for _, v := range d.Variables {
		width = max(width, len(v.Name))
	}
	fmt.Fprintln(w, "Variables (bit offsets: in the ENI's image, in ecagent's):")
	for _, v := range d.Variables {
		where := "not mapped"
		if v.BitOffset >= 0 {
			where = fmt.Sprintf("%6d  = %d", v.BitOffset, v.Value)
		}
		fmt.Fprintf(w, "  %-*s  %-6s %-6s %3d bits  %6d  %s\n", width, v.Name, v.DataType, strings.ToLower(v.Direction), v.Bits, v.ENIBitOffset, where)
	}
}

package eni

import "github.com/ecagent/ecagent/ethercat/internal/etgxml"

// readCyclic reads one Cyclic element.
func readCyclic(x *etgxml.Errors, e *etgxml.Element) Cyclic {
	c := Cyclic{Comment: e.Child("Comment").Text(), CycleTime: optUint[uint32](x, e.Child("CycleTime"))}
	for _, f := range e.Children("Frame") {
		fr := Frame{Comment: f.Child("Comment").Text()}
		for _, cmd := range f.Children("Cmd") {
			fr.Cmds = append(fr.Cmds, readCyclicCmd(x, cmd))
		}
		c.Frames = append(c.Frames, fr)
	}
	return c
}

// readCyclicCmd reads one datagram of a cyclic frame.
func readCyclicCmd(x *etgxml.Errors, e *etgxml.Element) CyclicCmd {
	c := CyclicCmd{Line: e.Line,
		Comment:    e.Child("Comment").Text(),
		Cmd:        readCommand(x, e),
		Cnt:        optUint[uint16](x, e.Child("Cnt")),
		InputOffs:  optUint[uint32](x, e.Child("InputOffs")),
		OutputOffs: optUint[uint32](x, e.Child("OutputOffs")),
	}
	for _, s := range e.Children("State") {
		c.States = append(c.States, etgxml.OneOf(x, s, "INIT", "PREOP", "SAFEOP", "OP", "BOOT"))
	}
	c.Address = readAddress(x, e, c.Cmd)
	if d := e.Child("Data"); d != nil {
		c.Data = readData(x, e, true)
		c.DataLength = uint16(len(c.Data))
	} else {
		c.DataLength = uint16(len(readData(x, e, true)))
	}
	return c
}

// readProcessImage reads the ProcessImage element; a variable that does
// not fit its image is an error.
func readProcessImage(x *etgxml.Errors, e *etgxml.Element) *ProcessImage {
	return &ProcessImage{
		Inputs:  readImage(x, e.Child("Inputs")),
		Outputs: readImage(x, e.Child("Outputs")),
	}
}

// readImage reads the Inputs or Outputs of the process image.
func readImage(x *etgxml.Errors, e *etgxml.Element) Image {
	if e == nil {
		return Image{}
	}
	im := Image{ByteSize: etgxml.Uint[uint32](x, etgxml.Need(x, e, "ByteSize"))}
	for _, v := range e.Children("Variable") {
		vr := Variable{Line: v.Line,
			Name:     etgxml.Need(x, v, "Name").Text(),
			Comment:  v.Child("Comment").Text(),
			DataType: v.Child("DataType").Text(),
			BitSize:  etgxml.Uint[uint32](x, etgxml.Need(x, v, "BitSize")),
			BitOffs:  etgxml.Uint[uint32](x, etgxml.Need(x, v, "BitOffs")),
		}
		if uint64(vr.BitOffs)+uint64(vr.BitSize) > 8*uint64(im.ByteSize) {
			x.At(v, "", "", ErrValue, "variable %q (bits %d to %d) lies beyond the %s image of %d bytes",
				vr.Name, vr.BitOffs, uint64(vr.BitOffs)+uint64(vr.BitSize)-1, e.Name, im.ByteSize)
		}
		im.Variables = append(im.Variables, vr)
	}
	return im
}

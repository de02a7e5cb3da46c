package esi

import (
	"strings"
	"testing"
)

// dictionaryOf reads one device whose dictionary has the data types and
// objects given.
func dictionaryOf(t *testing.T, types, objects string) (*Dictionary, []Warning) {
	t.Helper()
	doc := `<EtherCATInfo><Vendor><Id>2</Id></Vendor><Descriptions><Devices><Device><Type ProductCode="1" RevisionNo="1">D</Type>` +
		`<Profile><Dictionary><DataTypes>` + types + `</DataTypes><Objects>` + objects + `</Objects></Dictionary></Profile></Device></Devices></Descriptions></EtherCATInfo>`
	f, err := Read(strings.NewReader(doc), "d.xml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f.Devices[0].Dictionary(), f.Warnings
}

func TestResolveEdgeCases(t *testing.T) {
	const arr0 = `<DataType><Name>A0</Name><BaseType>UINT</BaseType><BitSize>0</BitSize><ArrayInfo><LBound>1</LBound><Elements>0</Elements></ArrayInfo></DataType>`
	tests := []struct {
		name, types, objects string
		entries              int
		warning              string
	}{
		{"record starting with an empty array", arr0 + `<DataType><Name>R</Name><BitSize>16</BitSize><SubItem><Name>E</Name><Type>A0</Type><BitSize>0</BitSize><BitOffs>0</BitOffs></SubItem></DataType>`,
			`<Object><Index>1</Index><Name>o</Name><Type>R</Type><BitSize>16</BitSize></Object>`, 0, ""},
		{"array past subindex 255", `<DataType><Name>A</Name><BaseType>USINT</BaseType><BitSize>2400</BitSize><ArrayInfo><LBound>1</LBound><Elements>300</Elements></ArrayInfo></DataType>`,
			`<Object><Index>1</Index><Name>o</Name><Type>A</Type><BitSize>2400</BitSize></Object>`, 256, "passes subindex 255: cut there"},
		{"array with a huge lower bound", `<DataType><Name>A</Name><BaseType>USINT</BaseType><BitSize>8</BitSize><ArrayInfo><LBound>4000000000</LBound><Elements>1</Elements></ArrayInfo></DataType>`,
			`<Object><Index>1</Index><Name>o</Name><Type>A</Type><BitSize>8</BitSize></Object>`, 1, "passes subindex 255"},
		{"undeclared record type", "", `<Object><Index>#x1018</Index><Name>o</Name><Type>DT1018</Type><BitSize>144</BitSize></Object>`, 0,
			`type "DT1018" is neither declared in DataTypes nor a base type`},
		{"member without SubIdx that is no array", `<DataType><Name>R</Name><BitSize>16</BitSize><SubItem><Name>E</Name><Type>UINT</Type><BitSize>16</BitSize><BitOffs>0</BitOffs></SubItem></DataType>`,
			`<Object><Index>1</Index><Name>o</Name><Type>R</Type><BitSize>16</BitSize></Object>`, 0, "is not an array type: left out"},
		{"default too big", "", `<Object><Index>1</Index><Name>o</Name><Type>USINT</Type><BitSize>8</BitSize><Info><DefaultValue>256</DefaultValue></Info></Object>`, 1,
			`DefaultValue "256": out of range for 8 bits; it has no default`},
		{"default of a string by number", "", `<Object><Index>1</Index><Name>o</Name><Type>STRING(80)</Type><BitSize>640</BitSize><Info><DefaultValue>1</DefaultValue></Info></Object>`, 1,
			"a number for a 640-bit value"},
		{"info for no subindex", `<DataType><Name>R</Name><BitSize>16</BitSize><SubItem><SubIdx>0</SubIdx><Name>SubIndex 000</Name><Type>USINT</Type><BitSize>8</BitSize><BitOffs>0</BitOffs></SubItem></DataType>`,
			`<Object><Index>1</Index><Name>o</Name><Type>R</Type><BitSize>16</BitSize><Info><SubItem><Name>Gone</Name><Info><DefaultData>01</DefaultData></Info></SubItem></Info></Object>`, 1,
			`Info/SubItem "Gone" matches no subindex of type R`},
		{"alias loop", `<DataType><Name>X</Name><BaseType>Y</BaseType><BitSize>8</BitSize></DataType><DataType><Name>Y</Name><BaseType>X</BaseType><BitSize>8</BitSize></DataType>`,
			`<Object><Index>1</Index><Name>o</Name><Type>X</Type><BitSize>8</BitSize></Object>`, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ws := dictionaryOf(t, tt.types, tt.objects)
			if n := len(d.Objects[0].Entries); n != tt.entries {
				t.Errorf("%d entries, want %d", n, tt.entries)
			}
			var all []string
			for _, w := range ws {
				all = append(all, w.Reason)
			}
			if got := strings.Join(all, "\n"); tt.warning == "" && got != "" || !strings.Contains(got, tt.warning) {
				t.Errorf("warnings %q, want %q", got, tt.warning)
			}
		})
	}
}

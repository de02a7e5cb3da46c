package esi

// Dictionary is a device's CoE object dictionary as its ESI describes it:
// the data types and the objects, each object's subindexes resolved
// through its data type (Object.Entries).
type Dictionary struct {
	DataTypes []DataType
	Objects   []Object
}

// Object returns the object at index, nil when there is none.
func (d *Dictionary) Object(index uint16) *Object {
	if d == nil {
		return nil
	}
	for i := range d.Objects {
		if d.Objects[i].Index == index {
			return &d.Objects[i]
		}
	}
	return nil
}

// DataType returns the data type named name, nil when the dictionary
// declares none (a base type need not be declared).
func (d *Dictionary) DataType(name string) *DataType {
	if d == nil {
		return nil
	}
	for i := range d.DataTypes {
		if d.DataTypes[i].Name == name {
			return &d.DataTypes[i]
		}
	}
	return nil
}

// DataType is one DataType element: a base type, an alias of one
// (BaseType), an enumeration (Enums), an array (Arrays) or a record
// (SubItems).
type DataType struct {
	Line     int
	Name     string
	BaseType string // the element type of an array, the base of an alias or enumeration
	BitSize  uint32
	Arrays   []ArrayInfo // one per dimension
	SubItems []SubItem
	Enums    []Enum
}

// ArrayInfo is one dimension of an array type.
type ArrayInfo struct {
	LBound   uint32
	Elements uint32
}

// SubItem is one member of a record type.
type SubItem struct {
	// SubIdx is the subindex; HasSubIdx is false for the member that
	// stands for an array's elements in a record (0x1C12's "Elements").
	SubIdx    uint8
	HasSubIdx bool
	Name      string
	Type      string
	BitSize   uint32
	BitOffs   uint32
	Flags     Flags
}

// Enum is one value of an enumeration type.
type Enum struct {
	Value int64
	Text  Texts
}

// ObjectKind is how an object's subindexes are laid out.
type ObjectKind uint8

// The object kinds (CiA 301 object codes VAR, ARRAY, RECORD).
const (
	KindUnknown ObjectKind = iota // the type could not be resolved
	KindVar
	KindArray
	KindRecord
)

// String returns the CiA 301 name of the kind.
func (k ObjectKind) String() string {
	switch k {
	case KindVar:
		return "VAR"
	case KindArray:
		return "ARRAY"
	case KindRecord:
		return "RECORD"
	}
	return "unknown"
}

// Object is one object of the dictionary.
type Object struct {
	Line    int
	Index   uint16
	Name    Texts
	Type    string // the data type's name
	BitSize uint32
	Flags   Flags
	Info    ObjectInfo // the defaults as written
	Kind    ObjectKind
	// Entries are the object's subindexes, resolved through its data type
	// with their names, types, access rights and defaults: one (subindex
	// 0) for a VAR. A type that cannot be resolved leaves it empty, with
	// a warning.
	Entries []Entry
}

// Entry returns the subindex sub, nil when the object has none.
func (o *Object) Entry(sub uint8) *Entry {
	for i := range o.Entries {
		if o.Entries[i].SubIndex == sub {
			return &o.Entries[i]
		}
	}
	return nil
}

// Entry is one subindex of an object.
type Entry struct {
	SubIndex uint8
	Name     string
	DataType string // the type as the dictionary names it
	// BaseType is the type the value is stored as: DataType itself for a
	// base type, the base of an alias or enumeration.
	BaseType string
	BitSize  uint32
	BitOffs  uint32 // within the object, for complete access
	// Flags are the subindex's own flags where the data type gives them,
	// else the object's.
	Flags Flags
	// Default is the default value, little-endian as the object holds it,
	// nil when the file gives none.
	Default []byte
}

// ObjectInfo is the Info of an object or of one of its subitems: default,
// minimum and maximum as written.
type ObjectInfo struct {
	DefaultData   []byte // hexBinary, little-endian
	MinData       []byte
	MaxData       []byte
	DefaultValue  string // a number (#x or decimal) as written, "" when absent
	MinValue      string
	MaxValue      string
	DefaultString string
	Unit          uint32 // ETG.1004 unit code; 0 when absent
	SubItems      []InfoSubItem
}

// InfoSubItem is the Info of one subindex, matched by name.
type InfoSubItem struct {
	Name string
	Info ObjectInfo
}

// Access is who may read and write an object.
type Access uint8

// The access rights; AccessUnspecified when the file gives none.
const (
	AccessUnspecified Access = iota
	AccessRO
	AccessRW
	AccessWO
)

// String returns the right as the file writes it.
func (a Access) String() string {
	switch a {
	case AccessRO:
		return "ro"
	case AccessRW:
		return "rw"
	case AccessWO:
		return "wo"
	}
	return ""
}

// PDOMapping is where an object may be mapped.
type PDOMapping uint8

// The mapping permissions; MapNone when the object cannot be mapped.
const (
	MapNone PDOMapping = iota
	MapRx              // into an RxPDO (an output)
	MapTx              // into a TxPDO (an input)
	MapRxTx            // into both
)

// String returns the permission as the file writes it.
func (m PDOMapping) String() string {
	switch m {
	case MapRx:
		return "R"
	case MapTx:
		return "T"
	case MapRxTx:
		return "RT"
	}
	return ""
}

// Flags are the access rights and properties of an object or subindex.
type Flags struct {
	Access            Access
	ReadRestrictions  string // e.g. PreOp, PreOp_SafeOp: the states a read is allowed in
	WriteRestrictions string
	Category          string // m (mandatory), o (optional), c (conditional)
	PDOMapping        PDOMapping
	SafetyMapping     string
	Backup            bool
	Setting           bool
}

// Package eni reads EtherCAT Network Information files (ETG.2100
// EtherCATConfig XML), the segment configuration TwinCAT and EC-Engineer
// export: the master's frame settings and init commands; per slave its
// identity and addresses, its previous port, its process data (sync
// managers, assigned PDOs with their entries, the bits it occupies in the
// frames), its mailbox with the CoE startup SDOs, its register init
// commands by transition with their Validate, and its DC settings; the
// cyclic frames and their commands; and the process image's variables
// with their names, data types and bit offsets.
//
// [Read] and [ReadFile] read one file into a [Config], a slave at a time
// (a segment of hundreds of slaves reads with the memory of the largest
// slave plus the result). Input is refused past [Options] limits (size,
// depth, element counts), and a DOCTYPE that declares entities or names an
// external DTD is refused. Numbers are read as TwinCAT writes them
// (decimal) and as other tools do (#x or 0x hex); booleans as true/false
// or 1/0; the byte-swapped EtherType TwinCAT writes (a488) is taken for
// 88a4. Every error names the file, line, column, element path, attribute
// and value; every element or attribute the reader does not take is
// listed once in the warnings with the reason, so nothing a file asks for
// is dropped silently.
package eni

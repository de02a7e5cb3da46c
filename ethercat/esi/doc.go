// Package esi reads EtherCAT Slave Information files (ETG.2000
// EtherCATInfo XML), the device descriptions every vendor ships: identity
// and revisions, sync managers, FMMUs, PDOs with their entries, the CoE
// object dictionary with data types, defaults and access rights, the
// mailbox protocols, the DC operation modes and the EEPROM settings.
//
// [Read] and [ReadFile] read one file into a [File]; [Scan] streams one
// device at a time, so that a vendor's whole catalogue of tens of
// megabytes is read with the memory of its largest device. A [Catalog]
// reads files and directories ([LoadDir], the --esi DIR of the
// configuration) once and indexes their devices by vendor, product code
// and revision, keeping where each device starts in its file rather than
// the device (about 160 bytes per device); [Catalog.Lookup] reads the
// device asked for again from there, falls back to the nearest revision
// and says so.
//
// Files are read as the vendors' tools write them: with or without
// namespaces, numbers as #x hex or decimal (0x also), booleans as
// true/false or 1/0, UTF-8, UTF-16, ISO-8859-1 or Windows-1252. Input is
// refused past [Options] limits (size, depth, element counts), and a
// DOCTYPE that declares entities or names an external DTD is refused.
// Every error names the file, line, column, element path, attribute and
// value; every element or attribute the reader does not take is listed
// once in the warnings, with the reason, so nothing is dropped silently.
package esi

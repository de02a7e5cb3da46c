// Package etgxml reads the XML files of the EtherCAT Technology Group, ESI
// (ETG.2000 EtherCATInfo) and ENI (ETG.2100 EtherCATConfig), the way a
// commissioning engineer needs them read:
//
//   - hardened: the input is refused past a size limit, an element
//     nesting depth and an element count; a DOCTYPE that declares
//     entities or names an external DTD is refused before anything of it
//     is used; only the five predefined entities and character references
//     are expanded;
//   - streaming: a [Reader] walks the document one element at a time and
//     hands a caller one element's subtree at a time ([Reader.Fill]), so
//     that a catalogue of tens of megabytes never sits in memory as a
//     tree;
//   - located: every [Element] keeps its line and column, and every
//     [Error] names the file, line, column, element path and the
//     attribute and value at fault;
//   - accountable: an [Element] remembers which children and attributes
//     its reader consumed; [Warnings.Unused] lists each element or
//     attribute nobody read once per path, with a count and the first
//     line, so nothing in a file is dropped silently.
//
// Files may be UTF-8 (with or without a byte-order mark), UTF-16 with a
// byte-order mark, ISO-8859-1 or Windows-1252 (the encoding TwinCAT
// declares); element names are matched by their local name, with or
// without a namespace.
package etgxml

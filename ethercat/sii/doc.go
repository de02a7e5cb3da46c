// Package sii reads, parses and encodes EtherCAT SII (Slave Information Interface)
// EEPROM images as laid out in ETG.1000.6 and ETG.2010.
//
// An image is word addressed and little endian. Words 0x00–0x3F hold the fixed
// [Header] (PDI configuration, a CRC-8 checksum over words 0x00–0x06, identity,
// mailbox layout and supported protocols). From word 0x40 on follow categories, each a
// type word, a size word (in words) and that many words of data, up to an end marker of
// type 0xFFFF.
//
// [Parse] turns an image into a [Device]; [Encode] turns a Device back into an image,
// byte for byte the same up to and including the end marker when the Device came from
// Parse. Categories this package does not interpret are kept as raw bytes so that they
// survive the round trip.
//
// [Read] fetches an image from any [WordReader] (a device's ESC EEPROM interface, or an
// [Image] in memory or loaded with [LoadFile]), walking the category headers so that only
// the bytes up to the end marker are read.
package sii

package sii

// crcPoly is the SII checksum polynomial x^8+x^2+x+1.
const crcPoly = 0x07

// CRC8 returns the SII header checksum of b: CRC-8 with polynomial 0x07, initial value
// 0xFF, no reflection and no final XOR. The header checksum covers the first 14 bytes
// (words 0x00–0x06) and is stored in the low byte of word 0x07 (byte offset 0x0E).
func CRC8(b []byte) uint8 {
	crc := uint8(0xFF)
	for _, v := range b {
		crc ^= v
		for range 8 {
			if crc&0x80 != 0 {
				crc = crc<<1 ^ crcPoly
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

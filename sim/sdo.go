package sim

import "encoding/binary"

// The SDO server of the simulated mailbox: expedited, normal and segmented
// uploads and downloads, and their replies and aborts.

// downloadState is a segmented download in progress.
type downloadState struct {
	active   bool
	index    uint16
	sub      uint8
	complete bool
	toggle   bool
	size     int
	data     []byte // received so far, aliasing buf
	buf      [maxMailboxBytes * 4]byte
}

// sdoReply starts an SDO response in m.resp and returns its 8-byte SDO
// header to fill.
func (m *mailbox) sdoReply() []byte {
	out := m.resp[mailboxHeaderLen:]
	binary.LittleEndian.PutUint16(out, coeSDOResponse<<12)
	h := out[coeHeaderLen : coeHeaderLen+sdoHeaderLen]
	clear(h)
	return h
}

func (m *mailbox) abort(index uint16, sub uint8, code uint32) {
	h := m.sdoReply()
	h[0] = 0x80
	binary.LittleEndian.PutUint16(h[1:], index)
	h[3] = sub
	binary.LittleEndian.PutUint32(h[4:], code)
	m.reply(mbxTypeCoE, coeHeaderLen+sdoHeaderLen)
}

// sdo serves an SDO request (req starts with the command byte).
func (m *mailbox) sdo(req []byte) {
	cmd := req[0]
	index := binary.LittleEndian.Uint16(req[1:])
	sub := req[3]
	switch cmd >> 5 {
	case 2: // initiate upload
		m.initiateUpload(cmd, index, sub)
	case 3: // upload segment
		m.uploadSegment(cmd, index, sub)
	case 1: // initiate download
		m.initiateDownload(cmd, index, sub, req)
	case 0: // download segment
		m.downloadSegment(cmd, req)
	case 4: // abort from the master
		m.upload, m.download.active = nil, false
	default:
		m.abort(index, sub, abortCommand)
	}
}

// initiateUpload answers an initiate upload request: expedited when the
// value fits, else the value's size and as much of it as the mailbox
// takes, the rest left for upload segments.
func (m *mailbox) initiateUpload(cmd byte, index uint16, sub uint8) {
	complete := cmd&0x10 != 0
	m.upload = nil
	val, code := m.read(index, sub, complete)
	if code != 0 {
		m.abort(index, sub, code)
		return
	}
	h := m.sdoReply()
	binary.LittleEndian.PutUint16(h[1:], index)
	h[3] = sub
	if len(val) <= 4 && !complete {
		h[0] = 0x43 | byte(4-len(val))<<2
		copy(h[4:], val)
		m.reply(mbxTypeCoE, coeHeaderLen+sdoHeaderLen)
		return
	}
	h[0] = 0x41 | cmd&0x10
	binary.LittleEndian.PutUint32(h[4:], uint32(len(val)))
	room := m.replyCapacity() - coeHeaderLen - sdoHeaderLen
	if room < 0 {
		room = 0
	}
	n := copy(m.resp[mailboxHeaderLen+coeHeaderLen+sdoHeaderLen:], val[:min(len(val), room)])
	if n < len(val) {
		rest := copy(m.uploadBuf[:], val[n:])
		m.upload, m.uploadToggle = m.uploadBuf[:rest], false
	}
	m.reply(mbxTypeCoE, coeHeaderLen+sdoHeaderLen+n)
}

// uploadSegment answers an upload segment request with the next part of
// the value an initiate upload left.
func (m *mailbox) uploadSegment(cmd byte, index uint16, sub uint8) {
	if m.upload == nil {
		m.abort(index, sub, abortCommand)
		return
	}
	toggle := cmd&0x10 != 0
	if toggle != m.uploadToggle {
		m.upload = nil
		m.abort(index, sub, abortToggle)
		return
	}
	m.uploadToggle = !m.uploadToggle
	out := m.resp[mailboxHeaderLen:]
	binary.LittleEndian.PutUint16(out, coeSDOResponse<<12)
	room := m.replyCapacity() - coeHeaderLen - 1
	n := min(len(m.upload), room)
	c := cmd & 0x10
	if n == len(m.upload) {
		c |= 0x01
	}
	data := out[coeHeaderLen+1:]
	copy(data, m.upload[:n])
	size := n
	if n < 7 {
		c |= byte(7-n) << 1
		clear(data[n:7])
		size = 7
	}
	out[coeHeaderLen] = c
	m.upload = m.upload[n:]
	if len(m.upload) == 0 {
		m.upload = nil
	}
	m.reply(mbxTypeCoE, coeHeaderLen+1+size)
}

// initiateDownload serves an initiate download request: an expedited or
// complete one is written at once, a longer one starts a segmented
// download.
func (m *mailbox) initiateDownload(cmd byte, index uint16, sub uint8, req []byte) {
	complete := cmd&0x10 != 0
	m.download.active = false
	var data []byte
	switch {
	case cmd&0x02 != 0: // expedited
		size := 4
		if cmd&0x01 != 0 {
			size = 4 - int(cmd>>2&3)
		}
		data = req[4 : 4+size]
	default:
		size := int(binary.LittleEndian.Uint32(req[4:]))
		data = req[sdoHeaderLen:]
		if size > len(data) {
			m.startDownload(index, sub, complete, size, data, req)
			return
		}
		data = data[:size]
	}
	if code := m.write(index, sub, data, complete); code != 0 {
		m.abort(index, sub, code)
		return
	}
	m.downloadReply(index, sub, req)
}

// downloadReply answers a successful initiate download request.
func (m *mailbox) downloadReply(index uint16, sub uint8, req []byte) {
	h := m.sdoReply()
	h[0] = 0x60
	binary.LittleEndian.PutUint16(h[1:], index)
	h[3] = sub
	// The real EL3004 answers in the request's buffer: the data bytes
	// of the request stay in the response.
	copy(h[4:], req[4:8])
	m.reply(mbxTypeCoE, coeHeaderLen+sdoHeaderLen)
}

// startDownload begins a segmented download: the initiate request
// announced size bytes and carried the first part, data.
func (m *mailbox) startDownload(index uint16, sub uint8, complete bool, size int, data, req []byte) {
	switch {
	case m.od.find(index) == nil:
		m.abort(index, sub, abortNoObject)
		return
	case size > len(m.download.buf):
		m.abort(index, sub, abortOutOfMemory)
		return
	}
	dl := &m.download
	dl.active, dl.index, dl.sub, dl.complete, dl.toggle, dl.size = true, index, sub, complete, false, size
	dl.data = append(dl.buf[:0], data...)
	m.downloadReply(index, sub, req)
}

// downloadSegment serves a download segment request: the toggle must
// alternate, starting with 0; the last segment writes the object.
func (m *mailbox) downloadSegment(cmd byte, req []byte) {
	dl := &m.download
	if !dl.active {
		m.abort(0, 0, abortCommand)
		return
	}
	if toggle := cmd&0x10 != 0; toggle != dl.toggle {
		dl.active = false
		m.abort(dl.index, dl.sub, abortToggle)
		return
	}
	data := req[1:]
	if len(data) <= 7 {
		n := 7 - int(cmd>>1&0x07)
		data = data[:min(n, len(data))]
	}
	if len(dl.data)+len(data) > dl.size {
		dl.active = false
		m.abort(dl.index, dl.sub, abortLengthHigh)
		return
	}
	dl.data = append(dl.data, data...)
	if cmd&0x01 != 0 { // last segment
		dl.active = false
		code := uint32(abortLengthLow)
		if len(dl.data) == dl.size {
			code = m.write(dl.index, dl.sub, dl.data, dl.complete)
		}
		if code != 0 {
			m.abort(dl.index, dl.sub, code)
			return
		}
	}
	h := m.sdoReply()
	h[0] = 0x20 | cmd&0x10
	m.reply(mbxTypeCoE, coeHeaderLen+sdoHeaderLen)
	dl.toggle = !dl.toggle
}

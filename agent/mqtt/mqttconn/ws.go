package mqttconn

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/ecagent/ecagent/agent/mqtt/mqttconn/packet"
)

// wsGUID is the constant of the WebSocket opening handshake (RFC 6455,
// section 1.3).
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// wsConn carries MQTT in binary WebSocket messages (RFC 6455): it masks
// what it writes, as a client must, and reads the payload of data frames
// as one stream, answering pings.
type wsConn struct {
	net.Conn
	br *bufio.Reader

	wmu  sync.Mutex
	wbuf []byte
	mask [4]byte

	left   uint64  // payload bytes left in the current data frame
	rmask  [4]byte // the mask of the current frame, if masked
	masked bool
	pos    uint64
}

// dialWebSocket performs the opening handshake on nc (read through br).
func dialWebSocket(nc net.Conn, br *bufio.Reader, host, path string) (*wsConn, error) {
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n"
	if _, err := io.WriteString(nc, req); err != nil {
		return nil, fmt.Errorf("websocket handshake: %w", err)
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		return nil, fmt.Errorf("websocket handshake: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return nil, fmt.Errorf("websocket handshake: %s", resp.Status)
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	if resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		return nil, errors.New("websocket handshake: wrong Sec-WebSocket-Accept")
	}
	if !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		return nil, errors.New("websocket handshake: no Upgrade: websocket")
	}
	return &wsConn{Conn: nc, br: br}, nil
}

// Write sends b as one binary frame.
func (w *wsConn) Write(b []byte) (int, error) {
	if err := w.writeFrame(0x2, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (w *wsConn) writeFrame(op byte, b []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	f := append(w.wbuf[:0], 0x80|op)
	switch n := len(b); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n <= 0xffff:
		f = append(f, 0x80|126, byte(n>>8), byte(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	if _, err := rand.Read(w.mask[:]); err != nil {
		return err
	}
	f = append(f, w.mask[:]...)
	start := len(f)
	f = append(f, b...)
	for i := range f[start:] {
		f[start+i] ^= w.mask[i&3]
	}
	w.wbuf = f[:0]
	_, err := w.Conn.Write(f)
	return err
}

// Read reads payload bytes of data frames.
func (w *wsConn) Read(b []byte) (int, error) {
	for w.left == 0 {
		if err := w.nextFrame(); err != nil {
			return 0, err
		}
	}
	if uint64(len(b)) > w.left {
		b = b[:w.left]
	}
	n, err := w.br.Read(b)
	if w.masked {
		for i := range b[:n] {
			b[i] ^= w.rmask[(w.pos+uint64(i))&3]
		}
	}
	w.left -= uint64(n)
	w.pos += uint64(n)
	return n, packet.NoEOF(err)
}

// nextFrame reads frame headers up to the next data frame with payload,
// handling control frames on the way.
func (w *wsConn) nextFrame() error {
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		return err
	}
	op := h[0] & 0x0f
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var e [2]byte
		if _, err := io.ReadFull(w.br, e[:]); err != nil {
			return packet.NoEOF(err)
		}
		n = uint64(binary.BigEndian.Uint16(e[:]))
	case 127:
		var e [8]byte
		if _, err := io.ReadFull(w.br, e[:]); err != nil {
			return packet.NoEOF(err)
		}
		n = binary.BigEndian.Uint64(e[:])
	}
	w.masked = h[1]&0x80 != 0
	if w.masked {
		if _, err := io.ReadFull(w.br, w.rmask[:]); err != nil {
			return packet.NoEOF(err)
		}
	}
	w.pos = 0
	switch op {
	case 0x0, 0x1, 0x2: // continuation, text, binary
		w.left = n
		return nil
	case 0x8, 0x9, 0xa: // close, ping, pong
		if n > 125 {
			return errors.New("websocket: control frame too long")
		}
		var p [125]byte
		if _, err := io.ReadFull(w.br, p[:n]); err != nil {
			return packet.NoEOF(err)
		}
		if w.masked {
			for i := range p[:n] {
				p[i] ^= w.rmask[i&3]
			}
		}
		switch op {
		case 0x8:
			_ = w.writeFrame(0x8, p[:min(n, 2)])
			return io.EOF
		case 0x9:
			return w.writeFrame(0xa, p[:n])
		}
		return nil
	}
	return fmt.Errorf("websocket: frame with opcode %d", op)
}

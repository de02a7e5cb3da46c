package master

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/link"
)

// fakeEEPROM is one slave's EEPROM interface (0x0502–0x050F) reduced to
// what the master's reader uses, with the knobs the simulator does not
// offer: 4-byte reads, NACKs, an interface that stays busy.
type fakeEEPROM struct {
	mu        sync.Mutex
	image     []byte
	readSize  int // 4 or 8
	busyPolls int // status polls that still see busy after a command
	nacks     int // commands to refuse with a command error; <0: all
	stuck     bool

	busyLeft int
	addr     uint32
	errBits  uint16
	commands int
}

func (e *fakeEEPROM) answer(_ int, frame []byte) [][]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !decodes(frame) {
		return nil
	}
	for d := range datagrams(frame) {
		if d.ADO() != uint16(esc.RegSIIControl) {
			d.SetWKC(1) // other registers: accept, read zeros
			continue
		}
		switch d.Command {
		case wire.FPWR:
			ctl := binary.LittleEndian.Uint16(d.Data)
			if ctl&esc.SIICmdRead != 0 {
				e.commands++
				e.errBits = 0
				if e.nacks != 0 {
					e.nacks--
					e.errBits = esc.SIICommandError
				} else {
					e.addr = binary.LittleEndian.Uint32(d.Data[2:])
					e.busyLeft = e.busyPolls
				}
			}
		case wire.FPRD:
			st := e.errBits
			if e.readSize == 8 {
				st |= esc.SIIRead8Bytes
			}
			if e.busyLeft > 0 || e.stuck {
				st |= esc.SIIBusy
				e.busyLeft--
			}
			binary.LittleEndian.PutUint16(d.Data, st)
			binary.LittleEndian.PutUint32(d.Data[2:], e.addr)
			data := d.Data[6:]
			for i := range data {
				data[i] = 0xEE // beyond the read size: garbage
			}
			if st&esc.SIIBusy == 0 {
				for i := 0; i < e.readSize; i++ {
					if a := 2*int(e.addr) + i; a < len(e.image) {
						data[i] = e.image[a]
					} else {
						data[i] = 0xFF
					}
				}
			}
		}
		d.SetWKC(1)
	}
	return [][]byte{frame}
}

func TestReadSIIThroughESCRegisters(t *testing.T) {
	img, err := os.ReadFile(filepath.Join("../testdata/real-hw/sii", "el2004.bin"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := sii.Parse(img)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		eeprom   *fakeEEPROM
		retries  int
		wantErr  *SIIError
		commands int // read commands the reader should need, 0: don't check
	}{
		{"8-byte reads", &fakeEEPROM{readSize: 8}, 3, nil, 0},
		{"4-byte reads while busy", &fakeEEPROM{readSize: 4, busyPolls: 3}, 3, nil, 0},
		{"NACKs then success", &fakeEEPROM{readSize: 8, nacks: 2}, 3, nil, 0},
		{"NACK on every try", &fakeEEPROM{readSize: 8, nacks: -1}, 2, &SIIError{Address: 0x1001, Word: 0, Status: esc.SIICommandError | esc.SIIRead8Bytes}, 3},
		{"busy forever", &fakeEEPROM{readSize: 8, stuck: true}, 3, &SIIError{Address: 0x1001, Word: 0, Status: esc.SIIBusy | esc.SIIRead8Bytes, Busy: true}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := c.eeprom
			e.image = img
			a, b := link.NewPipe()
			responder(t, b, e.answer)
			siiTimeout := time.Second // count-based busy must not time out on a busy machine
			if e.stuck {
				siiTimeout = 50 * time.Millisecond
			}
			m, err := New(a, &Config{Retries: c.retries, Timeout: time.Second, SIITimeout: siiTimeout,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer m.link.Close()
			dev, err := m.readSII(context.Background(), &Slave{StationAddress: 0x1001})
			if c.wantErr != nil {
				var se *SIIError
				if !errors.As(err, &se) || *se != *c.wantErr {
					t.Fatalf("err %v, want %+v", err, *c.wantErr)
				}
				if c.commands != 0 && e.commands != c.commands {
					t.Errorf("%d read commands, want %d (one plus %d retries)", e.commands, c.commands, c.retries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(dev, want) {
				t.Errorf("device read through the ESC differs from the image's:\n%+v\n%+v", dev.Header, want.Header)
			}
			// Only the used part is read, in read-size steps: the header
			// once, the categories up to the end marker (plus the two
			// refused commands of the NACK case).
			used := len(mustRead(t, img))
			least := used / e.readSize
			if e.commands < least || e.commands > least+least/4+4 {
				t.Errorf("%d read commands for %d bytes of %d-byte reads", e.commands, used, e.readSize)
			}
		})
	}
}

// mustRead returns the used part of an image as sii.Read sees it.
func mustRead(t *testing.T, img []byte) []byte {
	b, err := sii.Read(context.Background(), sii.Image(img), len(img))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

package transport

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// rawID is the id of the i-th read sent past pkg/sftp on a fresh session
// (rawReads.add).
func rawID(i int) uint32 { return 1<<31 + uint32(i) + 1 }

// sftpPacket is a packet from the server: length, type, id, body.
func sftpPacket(typ byte, id uint32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(5+len(body)))
	b = append(b, typ)
	b = binary.BigEndian.AppendUint32(b, id)
	return append(b, body...)
}

func dataBody(data string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(data))), data...)
}

func statusBody(code uint32) []byte {
	return append(binary.BigEndian.AppendUint32(nil, code), 0, 0, 0, 0, 0, 0, 0, 0)
}

// FuzzWireReader feeds the session's reader with anything a server may
// send while reads sent past pkg/sftp wait for their answers. Whatever the
// stream, the reader must pass every packet that is not such an answer to
// pkg/sftp byte for byte, put no more data in a request's buffer than it
// asked for, and, once the stream ends or breaks, have answered every
// request: a request left waiting would hang its caller.
func FuzzWireReader(f *testing.F) {
	version := []byte{0, 0, 0, 5, 2, 0, 0, 0, 3}
	f.Add(append(append(version, sftpPacket(fxpData, rawID(0), dataBody("hello"))...),
		sftpPacket(fxpStatus, rawID(1), statusBody(fxEOF))...), uint8(2), uint16(8), uint8(3))
	f.Add(append(sftpPacket(fxpData, 7, dataBody("for pkg/sftp")), sftpPacket(fxpData, rawID(0), dataBody("toolong"))...),
		uint8(1), uint16(4), uint8(200))
	f.Add(sftpPacket(104, rawID(0), []byte("a name where data belongs")), uint8(1), uint16(16), uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, nreq uint8, destLen uint16, chunk uint8) {
		raw := newRawReads()
		dest := int(destLen % 4097)
		reqs := map[uint32]*rawReq{}
		for range nreq % 9 {
			q := &rawReq{dest: make([]byte, dest), done: make(chan struct{})}
			id, err := raw.add(q)
			if err != nil {
				t.Fatal(err)
			}
			reqs[id] = q
		}
		want, answers := wireModel(stream, dest, reqs)

		w := newWireReader(bytes.NewReader(stream), &Host{}, raw)
		buf := make([]byte, 1+int(chunk))
		var passed []byte
		for {
			n, err := w.Read(buf)
			passed = append(passed, buf[:n]...)
			if err != nil {
				break
			}
			if n == 0 {
				t.Fatal("a read returned nothing and no error")
			}
		}
		if !bytes.Equal(passed, want) {
			t.Fatalf("passed on %q, want %q", passed, want)
		}
		for id, q := range reqs {
			select {
			case <-q.done:
			default:
				t.Fatalf("request %#x never answered", id)
			}
			a, answered := answers[id]
			got := fmt.Sprintf("%d %q %v", q.n, q.dest[:q.n], q.err)
			if answered && got != fmt.Sprintf("%d %q %v", len(a.data), a.data, a.err) {
				t.Fatalf("request %#x: %s, want %q %v", id, got, a.data, a.err)
			}
			if !answered && (q.err == nil || q.n != 0) {
				t.Fatalf("request %#x answered %s by a broken stream", id, got)
			}
		}
	})
}

type wireAnswer struct {
	data []byte
	err  error
}

// wireModel says what the reader should make of stream, reads of dest
// bytes having the ids of reqs: the bytes for pkg/sftp, and the answers
// to the reads that a well-formed answer reached.
func wireModel(stream []byte, dest int, reqs map[uint32]*rawReq) ([]byte, map[uint32]wireAnswer) {
	var passed []byte
	answers := map[uint32]wireAnswer{}
	waiting := map[uint32]bool{}
	for id := range reqs {
		waiting[id] = true
	}
	for len(stream) >= 9 {
		length := int(binary.BigEndian.Uint32(stream))
		typ, id := stream[4], binary.BigEndian.Uint32(stream[5:])
		if length < 5 || !waiting[id] {
			n := min(4+length, len(stream))
			passed = append(passed, stream[:n]...)
			stream = stream[n:]
			continue
		}
		delete(waiting, id)
		rest, body := length-5, stream[9:]
		if rest < 4 || len(body) < 4 {
			break
		}
		word := binary.BigEndian.Uint32(body)
		switch {
		case typ == fxpData && int(word) <= dest && int(word) == rest-4 && len(body)-4 >= int(word):
			answers[id] = wireAnswer{data: body[4 : 4+word]}
		case typ == fxpStatus && len(body) >= rest:
			answers[id] = wireAnswer{data: []byte{}, err: statusError(word)}
		default:
			return passed, answers
		}
		stream = body[rest:]
	}
	return passed, answers
}

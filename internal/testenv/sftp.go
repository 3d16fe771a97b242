package testenv

import (
	"context"
	"io"
	"sync"

	"github.com/pkg/sftp"
)

// SFTPDialer returns a dialer that serves dir with an in-process pkg/sftp
// server over pipes: each call starts a fresh server session whose working
// directory is dir (paths are not confined to it). Closing either returned
// end ends the session. opts are passed to sftp.NewServer, e.g.
// sftp.ReadOnly().
func SFTPDialer(dir string, opts ...sftp.ServerOption) func(ctx context.Context) (io.ReadCloser, io.WriteCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, io.WriteCloser, error) {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		toServer, fromClient := io.Pipe()
		toClient, fromServer := io.Pipe()
		conn := &pipeConn{r: toServer, w: fromServer}
		srv, err := sftp.NewServer(conn, append([]sftp.ServerOption{sftp.WithServerWorkingDirectory(dir)}, opts...)...)
		if err != nil {
			return nil, nil, err
		}
		go func() {
			_ = srv.Serve()
			_ = srv.Close()
			_ = conn.Close()
		}()
		end := &session{conn: conn}
		return &clientReader{PipeReader: toClient, s: end}, &clientWriter{PipeWriter: fromClient, s: end}, nil
	}
}

// pipeConn is the server's side of one session.
type pipeConn struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (c *pipeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *pipeConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *pipeConn) Close() error {
	_ = c.r.Close()
	return c.w.Close()
}

// session ends the server side once, whichever client end closes first.
type session struct {
	once sync.Once
	conn *pipeConn
}

func (s *session) end() { s.once.Do(func() { _ = s.conn.Close() }) }

type clientReader struct {
	*io.PipeReader
	s *session
}

func (r *clientReader) Close() error {
	r.s.end()
	return r.PipeReader.Close()
}

type clientWriter struct {
	*io.PipeWriter
	s *session
}

func (w *clientWriter) Close() error {
	w.s.end()
	return w.PipeWriter.Close()
}

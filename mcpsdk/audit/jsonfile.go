package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// DefaultMaxFileBytes and DefaultKeepFiles are the rotation defaults of
// [JSONFileOptions].
const (
	DefaultMaxFileBytes int64 = 64 << 20
	DefaultKeepFiles          = 5
)

// JSONFileOptions configures [OpenJSONFile].
type JSONFileOptions struct {
	// MaxBytes is the size past which the file is rotated before the next
	// batch ([DefaultMaxFileBytes]); Keep is how many rotated files stay
	// (PATH.1 the newest, up to PATH.Keep; [DefaultKeepFiles]).
	MaxBytes int64
	Keep     int
}

// JSONFile is a [Sink] that appends each event as one line of JSON (the
// [mcpsdk.AuditEvent] encoding) to a file, synced after every batch, or to
// a writer such as stdout. A file is rotated by size.
type JSONFile struct {
	mu   sync.Mutex
	path string // "" for a writer
	f    *os.File
	w    io.Writer
	size int64
	opts JSONFileOptions
}

// OpenJSONFile opens (creating, mode 0600, or appending to) the file at
// path. The path "-" writes to stdout, without rotation.
func OpenJSONFile(path string, opts JSONFileOptions) (*JSONFile, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxFileBytes
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeepFiles
	}
	if path == "-" {
		return NewJSONWriter(os.Stdout), nil
	}
	j := &JSONFile{path: path, opts: opts}
	if err := j.open(); err != nil {
		return nil, err
	}
	return j, nil
}

// NewJSONWriter returns a sink writing JSON lines to w, never rotated nor
// closed.
func NewJSONWriter(w io.Writer) *JSONFile { return &JSONFile{w: w} }

func (j *JSONFile) open() error {
	f, err := os.OpenFile(j.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", j.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: stat %s: %w", j.path, err)
	}
	j.f, j.w, j.size = f, f, st.Size()
	return nil
}

// Write implements [Sink]: the batch's lines in one write, then a sync.
func (j *JSONFile) Write(_ context.Context, batch []*mcpsdk.AuditEvent) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range batch {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("audit: encode: %w", err)
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil && j.size > 0 && j.size+int64(buf.Len()) > j.opts.MaxBytes {
		if err := j.rotate(); err != nil {
			return err
		}
	}
	if j.w == nil {
		return errors.New("audit: the file is closed")
	}
	n, err := j.w.Write(buf.Bytes())
	j.size += int64(n)
	if err != nil {
		return fmt.Errorf("audit: write: %w", err)
	}
	if j.f != nil {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("audit: sync: %w", err)
		}
	}
	return nil
}

// rotate shifts PATH.i to PATH.i+1 (dropping PATH.Keep), PATH to PATH.1,
// and opens a fresh PATH.
func (j *JSONFile) rotate() error {
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("audit: close %s: %w", j.path, err)
	}
	j.f, j.w = nil, nil
	_ = os.Remove(j.path + "." + strconv.Itoa(j.opts.Keep))
	for i := j.opts.Keep - 1; i >= 1; i-- {
		_ = os.Rename(j.path+"."+strconv.Itoa(i), j.path+"."+strconv.Itoa(i+1))
	}
	if err := os.Rename(j.path, j.path+".1"); err != nil {
		_ = j.open() // keep appending to the unrotated file
		return fmt.Errorf("audit: rotate %s: %w", j.path, err)
	}
	return j.open()
}

// Close implements [Sink]: it closes the file (not a writer).
func (j *JSONFile) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f, j.w = nil, nil
	return err
}

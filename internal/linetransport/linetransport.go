// Package linetransport is an MCP stdio transport that frames messages by
// newline itself and hands the SDK only single, well-formed JSON-RPC
// messages, so that no line a client sends can end the session.
//
// The go-sdk's own stdio transport decodes a JSON stream: one malformed
// line, or one JSON array (a batch), ends the session and with it a stdio
// server's process. [Transport] reads one line at a time instead and
// answers, itself and with a null id:
//
//   - a line that is not JSON with -32700 (parse error);
//   - a JSON array (a batch, which MCP no longer has), a JSON value that
//     is not a JSON-RPC 2.0 message and a message whose id the server
//     cannot echo exactly (package jsonrpcid) with -32600 (invalid
//     request);
//   - a line longer than [Transport].MaxMessageBytes with -32600, after
//     discarding it up to its newline without keeping it.
//
// Blank lines are skipped. The session goes on after each of these.
//
// When In ends (a client that pipes its requests in and closes stdin), the
// connection reports the end only once every request it has read has been
// answered, or after [Transport].DrainTimeout: no request a client sent is
// dropped because its input ended first. [Transport].InputEnded lets the
// host answer at that moment the requests that never end by themselves.
package linetransport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/internal/jsonrpcid"
)

// DefaultMaxMessageBytes is the longest line [Transport] accepts when
// MaxMessageBytes is zero: 4 MiB, the go-sdk's default HTTP body limit.
const DefaultMaxMessageBytes = 4 << 20

// Messages of the errors the transport answers itself.
const (
	ParseErrorMessage = "parse error: the line is not JSON"
	BatchMessage      = "invalid request: JSON-RPC batches are not supported"
	InvalidMessage    = "invalid request: not a JSON-RPC 2.0 message"
	TooLongMessage    = "invalid request: the message is too large"
)

// Transport is an [mcp.Transport] over a pair of byte streams carrying
// newline-delimited JSON-RPC messages, such as a process's stdin and
// stdout. Connect may be called once.
type Transport struct {
	// In carries the client's messages, Out the server's.
	In  io.Reader
	Out io.Writer
	// MaxMessageBytes bounds one line; zero selects DefaultMaxMessageBytes.
	MaxMessageBytes int
	// DrainTimeout bounds how long the connection waits, once In has
	// ended, for the answers to the requests it has read; zero selects
	// DefaultDrainTimeout.
	DrainTimeout time.Duration
	// CheckParams, if set, is asked about every request before the SDK
	// sees it; a request it refuses (bad is true) is answered with its
	// code and message and the request's id.
	CheckParams func(method string, params json.RawMessage) (code int64, message string, bad bool)
	// InputEnded, if set, is called once when In ends, before the
	// connection waits for the answers to the requests it has read: the
	// host answers there the requests that would otherwise wait for ever,
	// such as an open subscriptions/listen (its stream has no reader
	// left to wait for).
	InputEnded func()
}

// DefaultDrainTimeout is the wait for pending answers after In ends when
// DrainTimeout is zero.
const DefaultDrainTimeout = 30 * time.Second

var _ mcp.Transport = (*Transport)(nil)

// Connect starts reading In and returns the connection.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	max := t.MaxMessageBytes
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	drain := t.DrainTimeout
	if drain <= 0 {
		drain = DefaultDrainTimeout
	}
	c := &conn{out: t.Out, lines: make(chan []byte), done: make(chan struct{}), drain: drain,
		pending: map[any]struct{}{}, answered: make(chan struct{}, 1), check: t.CheckParams, ended: t.InputEnded}
	go c.readLines(t.In, max)
	return c, nil
}

type conn struct {
	out   io.Writer
	wmu   sync.Mutex
	lines chan []byte // a line, or nil for one that was too long
	rerr  error       // set before lines is closed
	done  chan struct{}
	once  sync.Once

	drain    time.Duration
	pmu      sync.Mutex
	pending  map[any]struct{} // ids of the requests read and not yet answered
	answered chan struct{}    // a pending request was answered

	check func(method string, params json.RawMessage) (int64, string, bool)

	ended     func() // Transport.InputEnded
	endedOnce sync.Once
}

// drainPending waits, once In has ended, until every request read has been
// answered, the connection closes, ctx ends or the drain timeout passes.
func (c *conn) drainPending(ctx context.Context) {
	timer := time.NewTimer(c.drain)
	defer timer.Stop()
	for {
		c.pmu.Lock()
		n := len(c.pending)
		c.pmu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-c.done:
			return
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}

// readLines sends every line of in to c.lines until in ends or c closes.
func (c *conn) readLines(in io.Reader, max int) {
	defer close(c.lines)
	r := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+2 { // room for "\r\n"
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(chunk) == 0 && len(line) == 0 && !tooLong {
			c.rerr = err
			return
		}
		var msg []byte
		if !tooLong {
			msg = bytes.Clone(line)
			if msg == nil {
				msg = []byte{}
			}
		}
		select {
		case c.lines <- msg:
		case <-c.done:
			return
		}
		line, tooLong = line[:0], false
		if err != nil {
			c.rerr = err
			return
		}
	}
}

// Read returns the next well-formed message, answering every other line.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var line []byte
		var ok bool
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, io.EOF
		case line, ok = <-c.lines:
		}
		if !ok {
			if c.ended != nil {
				c.endedOnce.Do(c.ended)
			}
			c.drainPending(ctx)
			if c.rerr == nil || errors.Is(c.rerr, io.EOF) {
				return nil, io.EOF
			}
			return nil, c.rerr
		}
		msg, code, text := Classify(line)
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && c.check != nil {
			if code, text, bad := c.check(req.Method, req.Params); bad {
				if err := c.answerTo(req.ID, code, text); err != nil {
					return nil, err
				}
				continue
			}
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.pmu.Lock()
			c.pending[req.ID.Raw()] = struct{}{}
			c.pmu.Unlock()
		}
		if msg != nil {
			return msg, nil
		}
		if code == 0 {
			continue // a blank line
		}
		if err := c.answer(code, text); err != nil {
			return nil, err
		}
	}
}

// Classify decides what one line is: a message to hand to the SDK, an
// error to answer (its JSON-RPC code and message), or nothing (a blank
// line: nil and code 0). A nil line is one that was too long.
func Classify(line []byte) (msg jsonrpc.Message, code int64, text string) {
	if line == nil {
		return nil, jsonrpc.CodeInvalidRequest, TooLongMessage
	}
	trimmed := bytes.TrimSpace(line)
	switch {
	case len(trimmed) == 0:
		return nil, 0, ""
	case !json.Valid(trimmed):
		return nil, jsonrpc.CodeParseError, ParseErrorMessage
	case trimmed[0] == '[':
		return nil, jsonrpc.CodeInvalidRequest, BatchMessage
	case trimmed[0] != '{':
		return nil, jsonrpc.CodeInvalidRequest, InvalidMessage
	case !jsonrpcid.Exact(trimmed):
		return nil, jsonrpc.CodeInvalidRequest, jsonrpcid.Message
	}
	if req, ok := decodeRequest(trimmed); ok {
		return req, 0, ""
	}
	m, err := jsonrpc.DecodeMessage(trimmed)
	if err != nil {
		return nil, jsonrpc.CodeInvalidRequest, InvalidMessage
	}
	return m, 0, ""
}

// decodeRequest decodes the common shape of a request, one JSON object of
// at most the keys jsonrpc ("2.0"), id (a string or a number), method (a
// string) and params (an object or an array), each once, with no escape
// sequence and valid UTF-8 throughout, into the message
// jsonrpc.DecodeMessage would return for it (FuzzDecodeRequest compares
// the two). ok is false for every other line, which the caller decodes
// with jsonrpc.DecodeMessage: the SDK's decoder allocates a 32 KiB buffer
// per value it decodes, two per message, which is most of what reading a
// request costs the server.
func decodeRequest(line []byte) (req *jsonrpc.Request, ok bool) {
	if bytes.IndexByte(line, '\\') >= 0 || !utf8.Valid(line) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	const (
		hasVersion = 1 << iota
		hasID
		hasMethod
		hasParams
	)
	var (
		seen    int
		version string
		id      any
		method  string
		params  json.RawMessage
	)
	for dec.More() {
		t, err := dec.Token()
		key, isKey := t.(string)
		if err != nil || !isKey {
			return nil, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil || len(raw) == 0 {
			return nil, false
		}
		var bit int
		switch key {
		case "jsonrpc":
			bit = hasVersion
			if raw[0] != '"' || json.Unmarshal(raw, &version) != nil {
				return nil, false
			}
		case "id":
			bit = hasID
			switch {
			case raw[0] == '"':
				var s string
				if json.Unmarshal(raw, &s) != nil {
					return nil, false
				}
				id = s
			case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
				var f float64
				if json.Unmarshal(raw, &f) != nil {
					return nil, false
				}
				id = f
			default:
				return nil, false
			}
		case "method":
			bit = hasMethod
			if raw[0] != '"' || json.Unmarshal(raw, &method) != nil {
				return nil, false
			}
		case "params":
			bit = hasParams
			if raw[0] != '{' && raw[0] != '[' {
				return nil, false
			}
			params = raw
		default:
			return nil, false
		}
		if seen&bit != 0 {
			return nil, false
		}
		seen |= bit
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // more than one value
	}
	if seen&hasMethod == 0 || version != "2.0" {
		return nil, false
	}
	rid, err := jsonrpc.MakeID(id)
	if err != nil {
		return nil, false
	}
	return &jsonrpc.Request{ID: rid, Method: method, Params: params}, true
}

// answerTo writes an error response to the request with id.
func (c *conn) answerTo(id jsonrpc.ID, code int64, text string) error {
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: text}})
	if err != nil {
		return err
	}
	return c.write(context.Background(), b)
}

// answer writes an error response with a null id.
func (c *conn) answer(code int64, text string) error {
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   any    `json:"error"`
	}{"2.0", nil, map[string]any{"code": code, "message": text}})
	if err != nil {
		return err
	}
	return c.write(context.Background(), b)
}

// deadliner is what an *os.File on a pipe offers.
type deadliner interface{ SetWriteDeadline(time.Time) error }

func (c *conn) write(ctx context.Context, b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.done:
		return io.ErrClosedPipe
	default:
	}
	// A client that stops reading its pipe must not hold a write with a
	// deadline forever: give the pipe the context's deadline.
	if d, ok := c.out.(deadliner); ok {
		if dl, ok := ctx.Deadline(); ok && d.SetWriteDeadline(dl) == nil {
			defer d.SetWriteDeadline(time.Time{})
		}
	}
	_, err := c.out.Write(append(b, '\n'))
	return err
}

// Write sends one message on its own line, within ctx's deadline when Out
// supports write deadlines (an *os.File on a pipe).
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	err = c.write(ctx, b)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.pmu.Lock()
		delete(c.pending, resp.ID.Raw())
		c.pmu.Unlock()
		select {
		case c.answered <- struct{}{}:
		default:
		}
	}
	return err
}

// Close stops reading and writing; it may be called more than once.
func (c *conn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

// SessionID is empty: a stdio session has no id.
func (c *conn) SessionID() string { return "" }

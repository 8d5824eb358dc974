package config

import (
	"fmt"
	"strings"
)

// Position is a place in the file: a 1-based line and column. The zero
// Position is unknown.
type Position struct {
	Line   int
	Column int
}

// Error is one mistake in a resources file, at a position. Its text is
// FILE:LINE:COL: key: reason (FILE:LINE: when the column is unknown,
// without "key: " when no key holds the mistake), always on one line; it
// never holds the value of a [Secret]. A caller that maps a mistake back
// to its own terms (a flag, a form field) reads Key, never the text.
type Error struct {
	// File is the name the file was loaded under.
	File string
	// Pos is where the mistake is.
	Pos Position
	// Key is the dotted path of the file key that holds the mistake, such
	// as sources.docs.postgres.role or resources.doc.annotations.priority;
	// empty when the mistake is in no key (the file's YAML, its size).
	Key string
	// Reason says what is wrong, without the key.
	Reason string
}

// Error returns the go vet style line FILE:LINE:COL: key: reason.
func (e *Error) Error() string {
	msg := e.Reason
	if e.Key != "" {
		msg = e.Key + ": " + msg
	}
	msg = strings.Join(strings.Fields(msg), " ")
	line := max(e.Pos.Line, 1)
	if e.Pos.Column < 1 {
		return fmt.Sprintf("%s:%d: %s", e.File, line, msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, line, e.Pos.Column, msg)
}

// errs collects the mistakes found in one file; the first by position is
// the one reported.
type errs struct {
	file string
	list []*Error
}

// at records the mistake at p in key (a dotted path, or "" for none).
func (e *errs) at(p Position, key, format string, args ...any) {
	e.list = append(e.list, &Error{File: e.file, Pos: p, Key: key, Reason: fmt.Sprintf(format, args...)})
}

func (e *errs) add(x *Error) { e.list = append(e.list, x) }

// mistake is one mistake of f at p, in key.
func (f *File) mistake(p Position, key, format string, args ...any) *Error {
	return &Error{File: f.Name, Pos: p, Key: key, Reason: fmt.Sprintf(format, args...)}
}

// first returns the earliest mistake in the file, or nil.
func (e *errs) first() *Error {
	var best *Error
	for _, x := range e.list {
		if best == nil || x.Pos.Line < best.Pos.Line || (x.Pos.Line == best.Pos.Line && x.Pos.Column < best.Pos.Column) {
			best = x
		}
	}
	return best
}

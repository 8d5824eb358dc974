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
// FILE:LINE:COL: message (FILE:LINE: message when the column is unknown),
// always on one line; it never holds the value of a [Secret].
type Error struct {
	// File is the name the file was loaded under.
	File string
	// Pos is where the mistake is.
	Pos Position
	// Msg says what is wrong.
	Msg string
}

// Error returns the go vet style line FILE:LINE:COL: message.
func (e *Error) Error() string {
	msg := strings.Join(strings.Fields(e.Msg), " ")
	line := e.Pos.Line
	if line < 1 {
		line = 1
	}
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

func (e *errs) at(p Position, format string, args ...any) {
	e.list = append(e.list, &Error{File: e.file, Pos: p, Msg: fmt.Sprintf(format, args...)})
}

func (e *errs) add(x *Error) { e.list = append(e.list, x) }

// mistake is one mistake of f at p.
func (f *File) mistake(p Position, format string, args ...any) *Error {
	return &Error{File: f.Name, Pos: p, Msg: fmt.Sprintf(format, args...)}
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

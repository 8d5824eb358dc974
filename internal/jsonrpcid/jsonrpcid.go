// Package jsonrpcid is the one rule for the JSON-RPC ids the server
// accepts: those it can echo exactly.
//
// The go-sdk decodes a numeric id as a float64 and keeps it as an int64,
// so an id of 2^64 comes back as -9223372036854775808, -0.5 as 0 and 1e3
// as 1000: a client would get the answer to a request it did not send.
// [Exact] accepts a string, null (a notification) and an integer written
// plainly (no fraction, exponent, leading zero or "-0") whose magnitude is
// at most 2^53-1, which float64 holds exactly; both transports (the HTTP
// guard and the stdio line transport) refuse every other id with -32600
// and [Message] before the SDK sees it.
package jsonrpcid

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Message is the message of the -32600 error a message with an id the
// server cannot echo exactly is answered with (with a null id).
const Message = "invalid request: the id must be a string or an integer of magnitude at most 2^53-1"

// maxExact is the largest integer magnitude a float64 holds exactly.
const maxExact = 1<<53 - 1

// Exact reports whether every "id" member of the JSON object msg (each
// one: a duplicate key must not slip past) is an id the server echoes
// exactly. A msg that is not a JSON object has no id to check: Exact
// reports true and leaves it to the caller's other checks.
func Exact(msg []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return true
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return true // not JSON: the caller refuses it as such
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return true
		}
		if k == "id" && !exactID(v) {
			return false
		}
	}
	return true
}

// exactID reports whether one id value is echoed exactly.
func exactID(v json.RawMessage) bool {
	switch {
	case len(v) == 0:
		return false
	case v[0] == '"', string(v) == "null":
		return true
	}
	s := string(v)
	digits := s
	if s[0] == '-' {
		digits = s[1:]
	}
	if digits == "" || len(digits) > 16 || (digits[0] == '0' && (len(digits) > 1 || s[0] == '-')) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return err == nil && n <= maxExact
}

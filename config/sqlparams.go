package config

import (
	"errors"

	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

func isIdentStart(c byte) bool { return c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || '0' <= c && c <= '9' }

// scanSQL finds the named parameters ($tenant) of one PostgreSQL statement
// by the rules the postgres source binds it with ([postgres.NamedParams]),
// so that the file is refused where the store would refuse it, with the
// position. A refusal is problem, at byte offset off of sql.
func scanSQL(sql string) (params []postgres.NamedParam, problem string, off int) {
	params, err := postgres.NamedParams(sql)
	if err == nil {
		return params, "", 0
	}
	var se *postgres.SQLError
	if errors.As(err, &se) {
		return nil, se.Reason, se.Offset
	}
	return nil, err.Error(), 0
}

package postgres

// The checks a caller runs before it has a database: each is the check of
// the Source method it names, run on a source that serves nothing, so that
// a configuration file is refused by the store's own rules, with the
// store's *core.ConfigError (its Path, and an *SQLError for the byte of a
// refused statement), before it connects.

// CheckBinding checks b as [Source.Binding] does on a source named source
// whose SourceOptions.Objects hold the object sources objects.
func CheckBinding(source string, b SQLBinding, objects ...string) error {
	_, err := offline(source, objects).Binding(b)
	return err
}

// CheckPolicy checks a decide statement as [Source.Policy] does on a
// source named source.
func CheckPolicy(source, decide string) error {
	_, err := offline(source, nil).Policy(decide)
	return err
}

// CheckKeyGrant checks a grant statement as [Source.KeyGrant] does (with
// prefix, as [Source.PrefixGrant] does) on a source named source.
func CheckKeyGrant(source, binding, sql string, captures []string, prefix bool) error {
	_, err := offline(source, nil).keyGrant(binding, sql, captures, prefix)
	return err
}

// offline is a source named name that only checks: it has no session, so
// nothing it returns may be served.
func offline(name string, objects []string) *Source {
	objs := make(map[string]string, len(objects))
	for _, o := range objects {
		objs[o] = ""
	}
	return &Source{name: name, objects: objs}
}

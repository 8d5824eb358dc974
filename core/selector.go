package core

// STUB: exact matching only; replaced by the template index (issue 3).
type selector struct {
	exact map[string]*definition
	max   int
}

func newSelector(defs []*definition, maxURI int) (*selector, error) {
	s := &selector{exact: map[string]*definition{}, max: maxURI}
	for _, d := range defs {
		if d.desc.URI != "" {
			if _, dup := s.exact[d.desc.URI]; dup {
				return nil, &ConfigError{Definition: d.index, Name: d.desc.URI, Field: "URI", Reason: "is registered twice"}
			}
			s.exact[d.desc.URI] = d
		}
	}
	return s, nil
}

func (s *selector) match(uri string) (ResourceMatch, error) {
	if err := checkURI(uri, s.max); err != nil {
		return ResourceMatch{}, NewFailure(FailureInvalidRequest, err)
	}
	if d, ok := s.exact[uri]; ok {
		return ResourceMatch{uri: uri, def: d}, nil
	}
	return ResourceMatch{}, NewFailure(FailureUnavailable, nil)
}

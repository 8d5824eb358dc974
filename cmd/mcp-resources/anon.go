package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// checkAnonymous refuses HTTP with no authentication (neither tokens nor
// an identity provider, authenticated false) on an address other clients
// can reach, unless --anonymous asks for it; it returns the WARN line to
// log when serving anonymously there, else "". Over stdio, or with
// authentication, --anonymous is a contradiction and refused too.
func (s *serveCmd) checkAnonymous(authenticated bool) (warn string, err error) {
	switch {
	case s.Anonymous && s.HTTP == "":
		return "", errors.New("--anonymous needs --http: stdio serves its one --principal")
	case s.Anonymous && authenticated:
		return "", errors.New("--anonymous contradicts --tokens and an OAuth issuer: give one or the other")
	case s.HTTP == "" || authenticated || loopbackAddr(s.HTTP):
		return "", nil
	case !validHostPort(s.HTTP):
		return "", nil // the listener refuses it with its own error
	case !s.Anonymous:
		return "", fmt.Errorf("--http %s is not a loopback address and no authentication is configured: give --tokens or an OAuth issuer, or --anonymous to serve every client as principal %q", s.HTTP, s.Principal)
	}
	return "serving HTTP with no authentication on an address other hosts may reach (--anonymous): every client is served as principal " + s.Principal, nil
}

// loopbackAddr reports whether addr (host:port) listens on loopback only:
// localhost, 127.0.0.0/8 or ::1. An empty host (every interface) is not.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	host, _, _ = strings.Cut(host, "%") // a zone names an interface, not another host
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validHostPort reports whether addr is host:port as net.Listen takes it.
func validHostPort(addr string) bool {
	_, _, err := net.SplitHostPort(addr)
	return err == nil
}

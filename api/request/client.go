// Package request is what the server knows of a request besides its route and body: the client
// that sent it (its address, its rate-limit bucket, whether it came over HTTPS), the id it is
// logged by, what it accepts (negotiation), and the closed sets of labels it is counted by.
package request

import (
	"cmp"
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/go-chi/chi/v5/middleware"
)

// clientCtxKey is the context key of the client's address.
type clientCtxKey struct{}

// httpsCtxKey marks a request that a trusted proxy received over HTTPS (X-Forwarded-Proto).
type httpsCtxKey struct{}

// forwardedFor is the default client address header: a list that each proxy appends to.
const forwardedFor = "X-Forwarded-For"

// IdentifyClients resolves the address each request comes from, for the rate limits and the access
// log: the TCP peer, unless the peer is in a trusted proxy range; then the address in the one header
// the proxy sets (header: X-Forwarded-For, its rightmost entry outside those ranges, or a header of
// one address such as X-Real-IP). Anyone can write any header, so only that one is believed, and
// only from a trusted peer: behind a proxy that sets X-Real-IP and passes X-Forwarded-For on as the
// client wrote it, believing X-Forwarded-For too would give a client a fresh rate bucket per
// request. chi's ClientIPFrom* middlewares do the parsing.
func IdentifyClients(trusted []netip.Prefix, header string) func(http.Handler) http.Handler {
	resolve := middleware.ClientIPFromRemoteAddr
	if len(trusted) > 0 {
		cidrs := make([]string, len(trusted))
		for i, p := range trusted {
			cidrs[i] = p.String()
		}
		if header = http.CanonicalHeaderKey(cmp.Or(header, forwardedFor)); header == forwardedFor {
			resolve = middleware.ClientIPFromXFF(cidrs...)
		} else {
			resolve = middleware.ClientIPFromHeader(header, cidrs...)
		}
	}
	return func(next http.Handler) http.Handler {
		return resolve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ip := middleware.GetClientIP(r.Context())
			if ip == "" {
				// A trusted proxy that named no usable client: its own address, so that its
				// requests share one bucket rather than escape the limits.
				ip = peerHost(r.RemoteAddr)
			}
			ctx := context.WithValue(r.Context(), clientCtxKey{}, ip)
			if strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") && fromTrusted(r, trusted) {
				ctx = context.WithValue(ctx, httpsCtxKey{}, true)
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		}))
	}
}

// ViaHTTPS reports whether the client's request came over HTTPS: to this server, or to a trusted
// proxy that terminated TLS and said so. Its answers then name https addresses and its cookies
// are Secure.
func ViaHTTPS(r *http.Request) bool {
	https, _ := r.Context().Value(httpsCtxKey{}).(bool)
	return r.TLS != nil || https
}

// fromTrusted reports whether the request's TCP peer is in a trusted proxy range.
func fromTrusted(r *http.Request, trusted []netip.Prefix) bool {
	addr, err := netip.ParseAddr(peerHost(r.RemoteAddr))
	if err != nil {
		return false
	}
	addr = addr.Unmap().WithZone("")
	for _, p := range trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

func peerHost(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}

// ClientAddr is the address IdentifyClients found for the request of ctx.
func ClientAddr(ctx context.Context) string {
	ip, _ := ctx.Value(clientCtxKey{}).(string)
	return ip
}

// ClientKey is the client's rate-limit bucket: its address, or its /64 for IPv6, since one IPv6
// client usually holds a whole /64 and could otherwise take a fresh bucket per address.
func ClientKey(ctx context.Context) string {
	addr, err := netip.ParseAddr(ClientAddr(ctx))
	if err != nil {
		return ClientAddr(ctx)
	}
	if addr = addr.Unmap().WithZone(""); addr.Is4() {
		return addr.String()
	}
	p, _ := addr.Prefix(64)
	return p.String()
}

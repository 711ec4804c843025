package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/api/problem"
	"pastebin/api/request"
	"pastebin/store"
)

// adminAuth checks admin credentials: the bearer token of the JSON admin API and the token typed
// on the console's sign-in form. Both draw on one allowance of attempts per client
// (PASTEBIN_RATE_ADMIN_FAILURES), apart from the wrong delete tokens of pastes, so that a user
// guessing delete tokens behind the operator's NAT does not lock the operator out.
//
// Every attempt takes one from the client's allowance before its token is compared, in one atomic
// step in Redis (or in this process while Redis is down), and a right token gives it back. Checking
// the allowance first and counting the failure after would let a burst of parallel guesses all pass
// the check while one attempt was left; here at most the allowance's worth of attempts is ever
// compared, however many arrive at once. A right token is refused only when the allowance is
// spent at that moment, by wrong ones or by attempts still being judged.
type adminAuth struct {
	tokenHash []byte
	attempts  *clientRate // nil: no limit
	refused   prometheus.Counter
	logger    *slog.Logger
}

func newAdminAuth(cfg Config, deps Deps, lim *limits) *adminAuth {
	a := &adminAuth{tokenHash: cfg.AdminTokenHash, refused: lim.refused.WithLabelValues("admin_failures"), logger: deps.Logger}
	if cfg.AdminFailureRate.On() {
		a.attempts = newClientRate("admin-failures", cfg.AdminFailureRate, cfg, deps, deps.Logger)
	}
	return a
}

// Verify answers nil when token is the admin token; otherwise the problem to answer: a wrong token,
// or the client's allowance spent (429 with Retry-After), in which case the token was not compared.
// Every wrong token is logged, with the client and how it came (via), never the token.
func (a *adminAuth) Verify(ctx context.Context, token, via string) *problem.Problem {
	if a.attempts != nil {
		v := a.attempts.allow(ctx, request.ClientKey(ctx))
		if !v.Allowed {
			a.refused.Inc()
			return rateLimited(a.attempts.rate, "wrong admin tokens", v.RetryAfter)
		}
	}
	got := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(got[:], a.tokenHash) == 1 {
		if a.attempts != nil {
			a.attempts.refund(ctx, request.ClientKey(ctx))
		}
		return nil
	}
	a.logger.WarnContext(ctx, "wrong admin token", "via", via, "client", request.ClientAddr(ctx))
	return problem.WrongAdminToken.WithDetail("This is not the admin token the server was given.")
}

// requireAdmin lets through requests whose bearer token is the admin token.
func (a *adminAuth) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(a.tokenHash) == 0 {
			problem.Write(w, r, problem.AdminDisabled.WithDetail("The admin API is off: set PASTEBIN_ADMIN_TOKEN to turn it on."))
			return
		}
		token, ok := bearerToken(r)
		if !ok {
			problem.Write(w, r, problem.Unauthorized.WithDetail("Send the admin token as Authorization: Bearer <token>."))
			return
		}
		if p := a.Verify(r.Context(), token, store.ViaAPI); p != nil {
			problem.Write(w, r, p)
			return
		}
		next.ServeHTTP(w, r)
	})
}

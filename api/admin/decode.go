package admin

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"pastebin/api/problem"
	"pastebin/store"
)

// maxAdminBody bounds the JSON bodies of the admin API: a reason and a few flags.
const maxAdminBody = 16 << 10

// maxReason bounds an operator's reason, which the audit log keeps.
const maxReason = 1000

// takedownRequest is the body of DELETE /admin/pastes/{code}; its fields may come as query
// parameters instead.
type takedownRequest struct {
	Reason string `json:"reason"`
	Legal  bool   `json:"legal"`
	Block  bool   `json:"block"`
}

// blockRequest is the body of POST /admin/blocked, and the console's block form: the content by
// its hash, or as a paste's.
type blockRequest struct {
	ContentHash string `json:"content_hash"`
	Code        string `json:"code"`
	Reason      string `json:"reason"`
	Legal       bool   `json:"legal"`
	TakeDown    bool   `json:"take_down"`
}

// toBlock checks the request and turns it into the store's Block.
func (req blockRequest) toBlock() (store.Block, error) {
	b := store.Block{Code: req.Code, Reason: req.Reason, Legal: req.Legal, TakeDown: req.TakeDown}
	if err := checkReason(req.Reason); err != nil {
		return b, err
	}
	if (req.ContentHash == "") == (req.Code == "") {
		return b, problem.BadRequest.WithDetail("Name the content by content_hash or by a paste's code, not both.")
	}
	if req.ContentHash != "" {
		h, err := store.ParseContentHash(strings.ToLower(req.ContentHash))
		if err != nil {
			return b, problem.BadRequest.WithDetail("content_hash: " + err.Error() + ".")
		}
		b.ContentHash = h
	}
	return b, nil
}

// limitParam reads the limit query parameter: 1 to 1000, def when absent.
func limitParam(r *http.Request, def int) (int, *problem.Problem) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, problem.BadRequest.WithDetail("limit must be a number from 1 to 1000.")
	}
	return n, nil
}

// decodeAdminRequest reads a takedown's fields from a JSON body, or else from the query: flags by
// name, and the reason, which is required.
func decodeAdminRequest(r *http.Request, v any, flags map[string]*bool, reason *string) *problem.Problem {
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		if err := decodeJSONBody(r, v); err != nil {
			return err
		}
	} else {
		q := r.URL.Query()
		*reason = q.Get("reason")
		for name, flag := range flags {
			on, err := parseFlag(q.Get(name))
			if err != nil {
				return problem.BadRequest.WithDetail(name + " must be true or false.")
			}
			*flag = on
		}
	}
	return checkReason(*reason)
}

// decodeJSONBody reads one JSON object with known fields only.
func decodeJSONBody(r *http.Request, v any) *problem.Problem {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxAdminBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return problem.BadRequest.WithDetail("The body must be one JSON object of the documented fields: " + err.Error() + ".")
	}
	if dec.More() {
		return problem.BadRequest.WithDetail("The body must be one JSON object.")
	}
	return nil
}

// checkReason requires the operator's reason, which the audit log keeps.
func checkReason(reason string) *problem.Problem {
	switch {
	case strings.TrimSpace(reason) == "":
		return problem.BadRequest.WithDetail("Give a reason: the audit log keeps it.")
	case len(reason) > maxReason:
		return problem.BadRequest.WithDetail("The reason is longer than " + strconv.Itoa(maxReason) + " bytes.")
	}
	return nil
}

// parseFlag reads a boolean parameter: empty is false.
func parseFlag(v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	return strconv.ParseBool(v)
}

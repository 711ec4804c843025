package paste

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on the small create options, which readers are shown back.
const (
	maxTitleLen    = 200
	maxLanguageLen = 32
	maxFilenameLen = 255
)

// InvalidError is a create option that is not allowed; Detail says what would be.
type InvalidError struct{ Detail string }

func (e *InvalidError) Error() string { return "invalid option: " + e.Detail }

// Tidy checks and tidies the small options shown back to readers: the title, the language and the
// file name. A tidy Input tidies to itself.
func (in *Input) Tidy() error {
	in.Title = strings.TrimSpace(in.Title)
	in.Language = strings.ToLower(strings.TrimSpace(in.Language))
	in.Filename = strings.TrimSpace(in.Filename)
	switch {
	case !printable(in.Title) || utf8.RuneCountInString(in.Title) > maxTitleLen:
		return &InvalidError{"title must be printable text of at most 200 characters."}
	case len(in.Language) > maxLanguageLen || strings.ContainsFunc(in.Language, notLanguageRune):
		return &InvalidError{"language must be a short name such as go, python or c++."}
	case !printable(in.Filename) || len(in.Filename) > maxFilenameLen || strings.ContainsAny(in.Filename, `/\"`) ||
		in.Filename == "." || in.Filename == "..": // a download under such a name would be a folder
		return &InvalidError{"filename must be a plain file name of at most 255 bytes."}
	}
	return nil
}

func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

func notLanguageRune(r rune) bool {
	return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || strings.ContainsRune("+#-._", r))
}

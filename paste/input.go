package paste

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"pastebin/envelope"
)

// Limits on the small create options, which readers are shown back.
const (
	maxTitleLen    = 200
	maxLanguageLen = 32
	maxFilenameLen = 255
	// MaxViews is the largest view limit a paste may have.
	MaxViews = 1000
)

// InvalidError is a create option that is not allowed; Detail says what would be.
type InvalidError struct{ Detail string }

func (e *InvalidError) Error() string { return "invalid option: " + e.Detail }

// Tidy checks and tidies the options: the title, the language and the file name shown back to
// readers, the view limit (burn after reading is a limit of one), and an encrypted paste's format.
// A tidy Input tidies to itself.
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
	case in.MaxViews < 0 || in.MaxViews > MaxViews:
		return &InvalidError{"max_views must be a whole number from 1 to 1000."}
	case in.Burn && in.MaxViews > 1:
		return &InvalidError{"Burn after reading is max_views=1: give one or the other."}
	}
	if in.Burn {
		in.MaxViews = 1
	}
	return in.tidyEncryption()
}

// tidyEncryption checks an encrypted paste: a format of docs/encryption.md (kept in its canonical
// form), a body of its shape, and no title, file name or language beside it, since they travel
// inside the ciphertext and must not be stored in clear. Its content is never looked at.
func (in *Input) tidyEncryption() error {
	if in.Encryption == "" {
		return nil
	}
	f, err := envelope.ParseFormat(in.Encryption)
	if err != nil {
		return &InvalidError{"encryption: " + err.Error() + " (see docs/encryption.md)."}
	}
	if in.Title != "" || in.Filename != "" || in.Language != "" {
		return &InvalidError{"An encrypted paste's title, file name and language go inside its ciphertext, never beside it."}
	}
	if err := f.CheckShape(in.Content); err != nil {
		return &InvalidError{"encryption: " + err.Error() + " (see docs/encryption.md)."}
	}
	in.Encryption = f.String()
	return nil
}

func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

func notLanguageRune(r rune) bool {
	return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || strings.ContainsRune("+#-._", r))
}

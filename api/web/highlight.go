package web

import (
	"bytes"
	"encoding/json"
	"html/template"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
)

// Limits on what a paste page renders. Chroma's lexers are regular expressions, and slower than
// linear: on the test machine 16 KiB of Go took 14 ms and of dense JavaScript 60 ms, 32 KiB took
// 80 and 200 ms, 64 KiB 150 and 300 ms. A page of many thousand lines helps nobody either: raw and
// download serve any size.
const (
	maxHighlightBytes = 32 << 10 // larger pastes are shown as plain text, which costs next to nothing
	maxShownBytes     = 1 << 20  // larger pastes are not shown in the page at all
	analyseBytes      = 16 << 10 // how much of a paste guessing its language looks at
)

// Highlighting styles: one for light pages, one for dark, chosen by the system setting.
const (
	lightStyle = "github"
	darkStyle  = "github-dark"
)

// rendered is a paste's content as the page shows it.
type rendered struct {
	HTML     template.HTML // one element per line, every byte of the paste escaped
	Language string        // the lexer's name, "" when the content is not shown
	Lines    int
	Omitted  string // why the content is not shown, when it is not
}

// tooLargeToShow is the rendering of a paste bigger than maxShownBytes, decided by its size alone.
var tooLargeToShow = rendered{Omitted: "This paste is too large to show here. Open it raw or download it."}

// renderContent highlights content with the language asked for, else one guessed from the file
// name or the content itself, else shows it as plain text.
func renderContent(content []byte, language, filename string) rendered {
	return renderLines(content, func() ([][]chroma.Token, string) { return highlightLines(content, language, filename) })
}

// renderPlain shows content as plain text without running a lexer: it costs next to nothing.
func renderPlain(content []byte) rendered {
	return renderLines(content, func() ([][]chroma.Token, string) { return nil, "" })
}

// renderLines renders content as the lines highlight returns, or as plain text when it returns nil.
func renderLines(content []byte, highlight func() ([][]chroma.Token, string)) rendered {
	switch {
	case len(content) > maxShownBytes:
		return tooLargeToShow
	case !utf8.Valid(content) || bytes.IndexByte(content, 0) >= 0:
		return rendered{Omitted: "This paste is not text. Download it to see it."}
	}
	lines, name := highlight()
	if lines == nil {
		lines, name = plainLines(content), "Plain text"
	}
	if !bytes.HasSuffix(content, []byte("\n")) {
		trimFinalNewline(lines) // some lexers add one; the copied text must be the paste
	}
	var buf bytes.Buffer
	n := writeLines(&buf, lines)
	return rendered{HTML: template.HTML(buf.String()), Language: name, Lines: n}
}

// highlightLines tokenises content, line by line, with the lexer for it; nil for plain text.
func highlightLines(content []byte, language, filename string) ([][]chroma.Token, string) {
	if len(content) > maxHighlightBytes {
		return nil, ""
	}
	lexer := pickLexer(content, language, filename)
	if lexer == nil {
		return nil, ""
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, string(content))
	if err != nil {
		return nil, "" // a lexer that fails is a chroma bug: show the text plain
	}
	return chroma.SplitTokensIntoLines(it.Tokens()), lexer.Config().Name
}

// plainLines splits content into lines of one text token each, without a lexer.
func plainLines(content []byte) [][]chroma.Token {
	text := strings.ReplaceAll(string(content), "\r\n", "\n")
	var lines [][]chroma.Token
	for line := range strings.SplitAfterSeq(text, "\n") {
		if line != "" {
			lines = append(lines, []chroma.Token{{Type: chroma.Text, Value: line}})
		}
	}
	return lines
}

func trimFinalNewline(lines [][]chroma.Token) {
	if len(lines) == 0 {
		return
	}
	last := lines[len(lines)-1]
	tok := &last[len(last)-1]
	tok.Value = strings.TrimSuffix(tok.Value, "\n")
}

// pickLexer chooses the lexer: the language asked for, else by file name, else by content. It
// returns nil for plain text.
func pickLexer(content []byte, language, filename string) chroma.Lexer {
	var l chroma.Lexer
	if language != "" {
		l = lexers.Get(language)
	}
	if l == nil && filename != "" {
		l = lexers.Match(filename)
	}
	if l == nil {
		l = guessLexer(string(content[:min(len(content), analyseBytes)]))
	}
	if l == nil || l == lexers.Fallback || l.Config().Name == "plaintext" {
		return nil
	}
	return l
}

func guessLexer(sample string) chroma.Lexer {
	if name := guessLanguage(sample); name != "" {
		return lexers.Get(name)
	}
	return lexers.Analyse(sample)
}

// languageHints recognise the most pasted languages by a line only they write. Chroma's own
// analysers know few languages and confuse some (Go's "func main()" reads as GDScript to them),
// so these come first.
var languageHints = []struct {
	lexer string
	re    *regexp.Regexp
}{
	{"php", regexp.MustCompile(`^\s*<\?php`)},
	{"xml", regexp.MustCompile(`^\s*<\?xml `)},
	{"html", regexp.MustCompile(`(?i)^\s*(<!doctype html|<html[\s>])`)},
	{"diff", regexp.MustCompile(`(?m)^(diff --git |--- \S.*\n\+\+\+ \S|@@ -\d+(,\d+)? \+\d+)`)},
	{"go", regexp.MustCompile(`(?m)^package [a-z_]\w*\s*$[\s\S]*^(func|import|type|var|const) `)},
	{"rust", regexp.MustCompile(`(?m)^\s*(pub )?fn \w+(<.*>)?\(.*\)( -> .+)? \{|^use \w+::`)},
	{"c", regexp.MustCompile(`(?m)^#include [<"]`)},
	{"python", regexp.MustCompile(`(?m)^(def \w+\(.*\):|class \w+(\(.*\))?:|from [\w.]+ import \w|import \w+$)`)},
	{"javascript", regexp.MustCompile(`(?m)^(import .+ from ['"]|export (default|const|function) |const \w+ = require\()|console\.log\(`)},
	{"sql", regexp.MustCompile(`(?im)^\s*(select .+ from |insert into |create (table|index|view) |update \w+ set |delete from )`)},
}

// guessLanguage names the lexer for content that looks like JSON or matches a hint, or "".
func guessLanguage(sample string) string {
	if t := strings.TrimSpace(sample); len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		return "json"
	}
	for _, h := range languageHints {
		if h.re.MatchString(sample) {
			return h.lexer
		}
	}
	return ""
}

// writeLines writes each line as a block the page can link to (#L12). The line number is drawn
// by CSS from data-n, so selecting and copying the code never copies the numbers; the links are
// hidden from screen readers and the tab order, which would otherwise step through every line.
func writeLines(buf *bytes.Buffer, lines [][]chroma.Token) int {
	for i, line := range lines {
		n := strconv.Itoa(i + 1)
		buf.WriteString(`<span class="line" id="L` + n + `"><a class="ln" href="#L` + n + `" data-n="` + n +
			`" aria-hidden="true" tabindex="-1"></a><span class="cl">`)
		for _, tok := range line {
			cls := tokenClass(tok.Type)
			if cls != "" {
				buf.WriteString(`<span class="` + cls + `">`)
			}
			template.HTMLEscape(buf, []byte(tok.Value))
			if cls != "" {
				buf.WriteString(`</span>`)
			}
		}
		buf.WriteString("</span></span>")
	}
	return len(lines)
}

// tokenClass is chroma's CSS class for a token type, inherited from its category when it has none.
func tokenClass(t chroma.TokenType) string {
	for ; t != 0; t = t.Parent() {
		if cls, ok := chroma.StandardTypes[t]; ok {
			return cls
		}
	}
	return ""
}

// highlightCSS is the stylesheet of the token classes: the light style, and the dark one for
// systems set to dark. Generated once at start-up, then served as a hashed static file.
func highlightCSS() []byte {
	f := html.New(html.WithClasses(true))
	var buf bytes.Buffer
	buf.WriteString("/* Generated by chroma: " + lightStyle + ", and " + darkStyle + " in dark mode. */\n")
	_ = f.WriteCSS(&buf, styles.Get(lightStyle))
	buf.WriteString("@media (prefers-color-scheme: dark) {\n")
	writeUnsetColours(&buf, styles.Get(lightStyle), styles.Get(darkStyle))
	_ = f.WriteCSS(&buf, styles.Get(darkStyle))
	buf.WriteString("}\n")
	return buf.Bytes()
}

// writeUnsetColours resets, for dark pages, the token colours the light style sets and the dark
// one leaves to its base text colour: chroma writes no rule for those, so the light rule would
// still apply and draw, say, github's near-black names on github-dark's near-black background.
func writeUnsetColours(buf *bytes.Buffer, light, dark *chroma.Style) {
	lightBase, darkBase := light.Get(chroma.Background), dark.Get(chroma.Background)
	// In a fixed order: the stylesheet's URL is its hash, the same on every replica.
	for _, t := range slices.Sorted(maps.Keys(chroma.StandardTypes)) {
		cls := chroma.StandardTypes[t]
		if t == chroma.Background || t == chroma.PreWrapper || cls == "" {
			continue
		}
		l, d := light.Get(t).Sub(lightBase), dark.Get(t).Sub(darkBase)
		if l.Colour.IsSet() && !d.Colour.IsSet() {
			buf.WriteString(".chroma ." + cls + " { color: inherit }\n")
		}
		if l.Background.IsSet() && !d.Background.IsSet() {
			buf.WriteString(".chroma ." + cls + " { background-color: transparent }\n")
		}
	}
}

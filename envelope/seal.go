package envelope

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/text/unicode/norm"
)

// Paste is what an envelope holds: the text and the details that would otherwise be stored in clear.
type Paste struct {
	Title    string `json:"title,omitempty"`
	Filename string `json:"filename,omitempty"`
	Language string `json:"language,omitempty"`
	Text     []byte `json:"-"`
}

// metaLengthSize is the length prefix of the JSON details at the start of the plaintext.
const metaLengthSize = 4

// maxMetaSize bounds the JSON details an envelope may declare, so a hostile one cannot make a
// reader allocate what it does not hold.
const maxMetaSize = 64 << 10

// ErrWrongKey says an envelope did not open: the key or the password is wrong, or the body or its
// format was changed since it was sealed. AES-GCM cannot tell these apart, and nor can a reader.
var ErrWrongKey = errors.New("wrong key or password")

// Seal encrypts p under a fresh random key and, when password is not empty, that password too. It
// returns the body to upload, its format, and the key, which goes in the link's fragment only.
func Seal(p Paste, password string) (body []byte, f Format, key []byte, err error) {
	f = Format{KDF: KDFNone}
	if password != "" {
		f = Format{KDF: KDFPBKDF2, Iterations: DefaultIterations}
	}
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, Format{}, nil, fmt.Errorf("draw key: %w", err)
	}
	body, err = seal(p, f, key, password)
	return body, f, key, err
}

func seal(p Paste, f Format, key []byte, password string) ([]byte, error) {
	meta, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	plain := binary.BigEndian.AppendUint32(make([]byte, 0, metaLengthSize+len(meta)+len(p.Text)), uint32(len(meta)))
	plain = append(append(plain, meta...), p.Text...)

	body := make([]byte, f.headerSize(), f.headerSize()+len(plain)+tagSize)
	body[0] = versionByte
	if _, err := rand.Read(body[1:]); err != nil { // the salt, if any, and the nonce
		return nil, fmt.Errorf("draw nonce: %w", err)
	}
	aead, err := newAEAD(f, key, password, body)
	if err != nil {
		return nil, err
	}
	nonce := body[f.headerSize()-nonceSize:]
	return aead.Seal(body, nonce, plain, []byte(f.String())), nil
}

// Open decrypts body, sealed in format f under key and password. A wrong key or password, and any
// change to the body or the format, answer ErrWrongKey.
func Open(body []byte, f Format, key []byte, password string) (Paste, error) {
	if err := f.CheckShape(body); err != nil {
		return Paste{}, err
	}
	if len(key) != KeySize {
		return Paste{}, fmt.Errorf("the key is %d bytes, want %d", len(key), KeySize)
	}
	aead, err := newAEAD(f, key, password, body)
	if err != nil {
		return Paste{}, err
	}
	nonce := body[f.headerSize()-nonceSize : f.headerSize()]
	plain, err := aead.Open(nil, nonce, body[f.headerSize():], []byte(f.String()))
	if err != nil {
		return Paste{}, ErrWrongKey
	}
	return unpack(plain)
}

// unpack splits an opened plaintext into its details and its text.
func unpack(plain []byte) (Paste, error) {
	n := binary.BigEndian.Uint32(plain) // Open's CheckShape leaves room for the prefix
	if n > maxMetaSize || uint64(n) > uint64(len(plain)-metaLengthSize) {
		return Paste{}, errors.New("the envelope's details overrun it")
	}
	var p Paste
	if n > 0 {
		if err := json.Unmarshal(plain[metaLengthSize:metaLengthSize+n], &p); err != nil {
			return Paste{}, fmt.Errorf("the envelope's details: %w", err)
		}
	}
	p.Text = plain[metaLengthSize+n:]
	return p, nil
}

// newAEAD is AES-256-GCM under the key f derives from the link's key and the password. body holds
// the salt, if f has one, after its version byte.
func newAEAD(f Format, key []byte, password string, body []byte) (cipher.AEAD, error) {
	aesKey := key
	if f.NeedsPassword() {
		if password == "" {
			return nil, errors.New("this paste needs a password")
		}
		secret := append(append([]byte{}, key...), norm.NFC.String(password)...)
		var err error
		aesKey, err = pbkdf2.Key(sha256.New, string(secret), body[1:1+saltSize], f.Iterations, KeySize)
		if err != nil {
			return nil, fmt.Errorf("derive key: %w", err)
		}
	}
	block, err := aes.NewCipher(aesKey)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// EncodeKey is the key as the link's fragment carries it: base64url without padding (43 characters).
func EncodeKey(key []byte) string { return base64.RawURLEncoding.EncodeToString(key) }

// DecodeKey reads a key from a link's fragment.
func DecodeKey(s string) ([]byte, error) {
	key, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(key) != KeySize {
		return nil, errors.New("the link's fragment is not a key of this service")
	}
	return key, nil
}

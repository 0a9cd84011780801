package attachments

import (
	"encoding/base64"
	"fmt"
)

// DecodeBase64Strict decodes s, which must be canonical standard base64:
// padded, no line breaks or other characters outside the alphabet, and no
// stray bits in the last quantum, so that encoding the result gives s again.
// Anything else is an *Error of kind KindInvalidBase64.
func DecodeBase64Strict(s string) ([]byte, error) {
	bad := func(why error) error {
		return &Error{Kind: KindInvalidBase64, Index: -1, Err: why}
	}
	if len(s)%4 != 0 {
		return nil, bad(errorString("its length is not a multiple of 4"))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/'
		if !ok && !(c == '=' && i >= len(s)-2) {
			return nil, bad(fmt.Errorf("unexpected character %q at offset %d", c, i))
		}
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, bad(err)
	}
	return b, nil
}

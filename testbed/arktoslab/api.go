package arktoslab

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// APIError is an API server's answer with a status other than 2xx.
type APIError struct {
	Code int
	Body string
}

// Error is the Status message the API server answered, else the body.
func (e *APIError) Error() string {
	var st struct{ Message string }
	if json.Unmarshal([]byte(e.Body), &st) == nil && st.Message != "" {
		return fmt.Sprintf("HTTP %d: %s", e.Code, st.Message)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body)
}

// IsNotFound says whether err is an API server's 404.
func IsNotFound(err error) bool {
	e, ok := err.(*APIError)
	return ok && e.Code == http.StatusNotFound
}

// HTTPClient is the labs' client: every request of a lab is to a process of
// its own namespace, so 10 s is long.
var HTTPClient = &http.Client{Timeout: 10 * time.Second}

// Request sends method to url with a JSON body ("" for none) and decodes a
// 2xx answer into out (nil: not decoded); another status is an *APIError.
func Request(method, url, body string, out interface{}) error {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return &APIError{Code: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// Str is the string at path in a decoded JSON object ("" when absent or
// not a string).
func Str(obj map[string]interface{}, path ...string) string {
	var cur interface{} = obj
	for _, k := range path {
		m, ok := cur.(map[string]interface{})
		if !ok {
			return ""
		}
		cur = m[k]
	}
	s, _ := cur.(string)
	return s
}

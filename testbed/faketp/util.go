package faketp

import (
	"encoding/json"
	"errors"
	"io/fs"
)

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

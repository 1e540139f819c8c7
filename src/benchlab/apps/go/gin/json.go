package main

import "encoding/json"

// jsonBody encodes exactly as gin's c.JSON does (encoding/json, no trailing newline).
func jsonBody(value any) ([]byte, error) {
	return json.Marshal(value)
}

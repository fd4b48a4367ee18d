package sglang

import "strings"

// Uvicorn renders a message of uvicorn's default formatter: the level
// name, a colon and padding to nine columns, then the message
// ("INFO:     Started server process [1]"). Both engines serve through
// uvicorn; each puts its own prefix in front.
func Uvicorn(level, msg string) string {
	return level + ":" + strings.Repeat(" ", max(8-len(level), 0)) + " " + msg
}

// Package apitime is the API's one way of writing a time: ISO 8601 in UTC
// with milliseconds, as JavaScript's Date.toISOString writes it, so every
// client parses every timestamp we send (hosted files, ZIPs, keys,
// accounts, webhooks) the same way.
package apitime

import "time"

// Layout is the time layout of every timestamp in an API answer.
const Layout = "2006-01-02T15:04:05.000Z07:00"

// Format writes t in Layout, in UTC.
func Format(t time.Time) string { return t.UTC().Format(Layout) }

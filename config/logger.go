package config

import (
	"log/slog"
	"os"
	"strings"
)

// NewLogger returns the JSON logger every binary writes to stderr, at BGCHECK_LOG_LEVEL.
func NewLogger(c Config) *slog.Logger {
	var level slog.Level
	switch strings.ToLower(c.LogLevel) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

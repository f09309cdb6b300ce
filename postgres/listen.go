package postgres

import (
	"context"
	"log/slog"
	"time"
)

// Listen calls notify with the payload of every notification on channel until ctx ends, holding
// one connection of the pool. When the connection breaks it reconnects and calls notify once
// with an empty payload, since notifications sent in between are lost.
func (db *DB) Listen(ctx context.Context, channel string, notify func(payload string), log *slog.Logger) {
	for ctx.Err() == nil {
		err := db.listenOnce(ctx, channel, notify)
		if ctx.Err() != nil {
			return
		}
		log.Warn("listen for notifications", "channel", channel, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		notify("")
	}
}

func (db *DB) listenOnce(ctx context.Context, channel string, notify func(payload string)) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+channel)
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		notify(n.Payload)
	}
}

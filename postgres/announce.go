package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// An announcer wakes the dispatchers (LISTEN DeliveriesChannel) after transactions that wrote
// outbox rows have committed, from outside those transactions, one NOTIFY at a time and at most
// one every announceGap: announcements that arrive meanwhile make one more, not one each. Each
// NOTIFY wakes every dispatcher for a round of claims, so under load a NOTIFY per event would
// cost more than the events.
//
// Why not NOTIFY inside the writing transaction: PostgreSQL serializes the commits of every
// transaction that notifies (a database-wide lock, held through the commit's WAL flush), so
// concurrent event inserts could not share a flush. Measured with pgbench on the event insert
// (16 clients, 2 cores): 846 commits/s with the NOTIFY inside, 1,273/s without it.
//
// A NOTIFY's payload says what was written: NewDeliveriesOnly when every transaction it
// announces wrote only new deliveries (events, redeliveries), so a dispatcher can claim them
// without reading its other outboxes; empty when any wrote another outbox's rows (checks to
// start, adverse actions, disputes, cancels, signals).
//
// Nothing depends on the announcement for correctness: a dispatcher also reads the outbox every
// second, so a process that dies between a commit and its announcement delays those rows by
// that second at most.
// announceGap is the least time between two announcements of a process: at most 200 a second,
// and an event waits that long at most for its own.
const announceGap = 5 * time.Millisecond

// NewDeliveriesOnly is the payload of a notification on DeliveriesChannel that announces new
// deliveries and nothing else.
const NewDeliveriesOnly = "deliveries"

type announcer struct {
	pool *pgxpool.Pool
	wake chan struct{}
	// others is set when an announcement waiting to be sent covers more than new deliveries.
	others atomic.Bool
	stop   context.CancelFunc
	done   chan struct{}
}

func startAnnouncer(pool *pgxpool.Pool) *announcer {
	ctx, stop := context.WithCancel(context.Background())
	a := &announcer{pool: pool, wake: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	go a.run(ctx)
	return a
}

// announce asks for a NOTIFY of new deliveries and, unless onlyNewDeliveries, of other outbox
// rows; it never blocks.
func (a *announcer) announce(onlyNewDeliveries bool) {
	if !onlyNewDeliveries {
		a.others.Store(true)
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *announcer) run(ctx context.Context) {
	defer close(a.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		}
		next := time.Now().Add(announceGap)
		nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		// An error is left to the dispatchers' polling, which finds the rows within a second.
		_, _ = a.pool.Exec(nctx, `SELECT pg_notify('`+DeliveriesChannel+`', $1)`, payload(!a.others.Swap(false)))
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
	}
}

// close stops the announcer; an announcement still in flight is abandoned.
func (a *announcer) close() {
	a.stop()
	<-a.done
}

// outboxTx is the transaction inTx hands its function: announceOutbox and announceNewDeliveries
// mark it, and inTx announces once it has committed.
type outboxTx struct {
	pgx.Tx
	announce, others bool
}

// announceOutbox has the dispatchers woken when tx commits, because tx wrote rows they must
// act on (checks to start, signals to send, workflows to cancel, deliveries). In a transaction
// of inTx the announcement is sent after the commit; in any other it is a NOTIFY inside tx, sent
// at commit.
func announceOutbox(ctx context.Context, tx pgx.Tx) error {
	return announce(ctx, tx, false)
}

// announceNewDeliveries is announceOutbox for a transaction whose only outbox rows are new
// deliveries.
func announceNewDeliveries(ctx context.Context, tx pgx.Tx) error {
	return announce(ctx, tx, true)
}

func announce(ctx context.Context, tx pgx.Tx, onlyNewDeliveries bool) error {
	if o, ok := tx.(*outboxTx); ok {
		o.announce = true
		o.others = o.others || !onlyNewDeliveries
		return nil
	}
	_, err := tx.Exec(ctx, `SELECT pg_notify('`+DeliveriesChannel+`', $1)`, payload(onlyNewDeliveries))
	return err
}

// payload is the payload of a notification that announces new deliveries only, or any outbox.
func payload(onlyNewDeliveries bool) string {
	if onlyNewDeliveries {
		return NewDeliveriesOnly
	}
	return ""
}

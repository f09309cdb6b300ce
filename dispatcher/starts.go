package dispatcher

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// startEach starts one workflow per claimed row of the domain's outboxes (checks, adverse
// actions, disputes), each bounded by StartTimeout; a workflow that already exists counts as
// started (its id is the row's). It returns the ids started and failed, and an
// errTemporalRefusedAll when none started and some failed: Temporal is down, not a row.
func startEach[T any](ctx context.Context, d *Dispatcher, batch []T, id func(T) string,
	start func(ctx context.Context, row T) (client.WorkflowRun, error)) (started, failed []string, err error) {
	var lastErr error
	for _, row := range batch {
		sctx, cancel := context.WithTimeout(ctx, d.opts.StartTimeout)
		_, err := start(sctx, row)
		cancel()
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if err != nil && !errors.As(err, &already) {
			failed, lastErr = append(failed, id(row)), err
			continue
		}
		started = append(started, id(row))
	}
	if len(started) == 0 && lastErr != nil {
		return started, failed, errTemporalRefusedAll{lastErr}
	}
	return started, failed, nil
}

// tell sends one signal or cancel to a workflow, bounded by StartTimeout. A workflow that no
// longer exists (it ended) needs telling nothing: that is success.
func (d *Dispatcher) tell(ctx context.Context, send func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.StartTimeout)
	defer cancel()
	err := send(ctx)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil
	}
	return err
}

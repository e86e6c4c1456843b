package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// webhookBatch is how many due webhooks one pass leases and delivers concurrently.
const webhookBatch = 16

// queueWebhook records, inside the transaction that ends run, the delivery of the session's outcome to
// the run's callback_url.
func (c *LocalCoordinator) queueWebhook(ctx context.Context, tx Store, fx *effects, run *RunBrief, payload WebhookPayload) error {
	body, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	now := Now()
	if err := tx.CreateWebhook(ctx, &Webhook{
		ID: NewID("wh_"), URL: run.CallbackURL, SessionID: payload.SessionID, RunID: run.ID, Payload: body,
		Status: WebhookPending, NextAttemptAt: now, CreatedAt: now,
	}); err != nil {
		return err
	}
	fx.webhooks = true
	return nil
}

// kickWebhooks wakes the deliverer without blocking.
func (c *LocalCoordinator) kickWebhooks() {
	select {
	case c.webhookKick <- struct{}{}:
	default:
	}
}

// webhookLoop delivers due webhooks: at once when this coordinator queued one, and every second for
// retries and for webhooks other replicas queued.
func (c *LocalCoordinator) webhookLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		c.DeliverWebhooks(ctx)
		select {
		case <-ctx.Done():
			return
		case <-c.webhookKick:
		case <-t.C:
		}
	}
}

// DeliverWebhooks delivers every webhook that is due now and returns when none is left. Each is leased
// first (Store.ClaimWebhooks), so replicas never deliver the same attempt twice; a replica that dies
// mid-delivery leaves the lease to expire and another replica retries. Start runs it in the background.
func (c *LocalCoordinator) DeliverWebhooks(ctx context.Context) {
	for ctx.Err() == nil {
		now := Now()
		due, err := c.store.ClaimWebhooks(ctx, now, now.Add(2*c.cfg.WebhookTimeout+time.Second), webhookBatch)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Error("claim webhooks", "err", err)
			}
			return
		}
		if len(due) == 0 {
			return
		}
		var wg sync.WaitGroup
		for _, w := range due {
			wg.Go(func() { c.deliverWebhook(ctx, w) })
		}
		wg.Wait()
	}
}

func (c *LocalCoordinator) deliverWebhook(ctx context.Context, w *Webhook) {
	err := c.postWebhook(ctx, w)
	now := Now()
	w.Attempts++
	switch {
	case err == nil:
		w.Status, w.DeliveredAt, w.LastError = WebhookDelivered, &now, ""
	case ctx.Err() != nil:
		return // shutting down: the lease expires and the attempt is made again
	default:
		w.LastError = err.Error()
		var perm permanentError
		if errors.As(err, &perm) || w.Attempts >= c.cfg.WebhookMaxAttempts {
			w.Status = WebhookFailed
			c.log.Warn("webhook given up", "webhook", w.ID, "url", w.URL, "attempts", w.Attempts, "err", err)
		} else {
			w.NextAttemptAt = now.Add(webhookBackoff(w.Attempts))
		}
	}
	if err := c.store.UpdateWebhook(context.WithoutCancel(ctx), w); err != nil {
		c.log.Error("record webhook attempt", "webhook", w.ID, "err", err)
	}
}

// permanentError is a delivery failure that retrying cannot fix.
type permanentError struct{ error }

// postWebhook makes one signed delivery attempt. A 2xx answer delivers; 4xx answers other than 408, 425
// and 429 are permanent (the receiver refuses this request, and will again); everything else is retried.
func (c *LocalCoordinator) postWebhook(ctx context.Context, w *Webhook) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(w.Payload))
	if err != nil {
		return permanentError{err}
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agent-orchestrator-webhook/1")
	req.Header.Set(HeaderWebhookDelivery, w.ID)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderWebhookSignature, SignWebhook(c.cfg.WebhookSecret, ts, w.Payload))
	resp, err := c.cfg.WebhookClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return nil
	case code >= 400 && code < 500 && code != 408 && code != 425 && code != 429:
		return permanentError{fmt.Errorf("%s answered %s", w.URL, resp.Status)}
	default:
		return fmt.Errorf("%s answered %s", w.URL, resp.Status)
	}
}

// webhookBackoff is the delay before retry n (1-based): exponential from 1s, capped at 10 minutes, with
// ±50% jitter so that many failed deliveries do not retry in lock-step.
func webhookBackoff(n int) time.Duration {
	d := time.Second << min(n-1, 10)
	d = min(d, 10*time.Minute)
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

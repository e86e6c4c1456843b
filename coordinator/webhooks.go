package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/egress"
	"github.com/agentorchestrator/orchestrator/internal/ids"
	"github.com/agentorchestrator/orchestrator/store"
	"github.com/agentorchestrator/orchestrator/webhook"
)

// queueWebhook records, inside the transaction that ends run, the delivery of the session's outcome to
// the run's callback_url.
func (c *Coordinator) queueWebhook(ctx context.Context, tx store.Store, fx *effects, run *store.RunBrief, payload orchestrator.WebhookPayload) error {
	body, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	now := c.now()
	if err := tx.CreateWebhook(ctx, &store.Webhook{
		ID: ids.New("wh_"), URL: run.CallbackURL, SessionID: payload.SessionID, RunID: run.ID, Payload: body,
		Status: store.WebhookPending, NextAttemptAt: now, CreatedAt: now,
	}); err != nil {
		return err
	}
	fx.webhooks = true
	return nil
}

// kickWebhooks wakes the deliverer without blocking.
func (c *Coordinator) kickWebhooks() {
	select {
	case c.webhookKick <- struct{}{}:
	default:
	}
}

// webhookLoop delivers due webhooks: at once when this coordinator queued one, when a delivery ends
// (its slot is free again), and every second for retries and for webhooks other replicas queued. It never
// waits for a delivery to end, so a receiver that hangs delays no one else's webhook; on return it waits
// for the deliveries in flight, which end with ctx.
func (c *Coordinator) webhookLoop(ctx context.Context) {
	var inflight sync.WaitGroup
	defer inflight.Wait()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		for ctx.Err() == nil {
			n, err := c.startDueWebhooks(ctx, &inflight, false)
			if err != nil {
				if ctx.Err() == nil {
					c.log.Error("claim webhooks", "err", err)
				}
				break
			}
			if n == 0 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-c.webhookKick:
		case <-t.C:
		}
	}
}

// DeliverWebhooks delivers every webhook that is due now and returns when none is left and the deliveries
// it started have ended. Each is leased first (Store.ClaimWebhooks), so replicas never deliver the same
// attempt twice; a replica that dies mid-delivery leaves the lease to expire and another replica retries.
// Start runs the same delivery in the background.
func (c *Coordinator) DeliverWebhooks(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		n, err := c.startDueWebhooks(ctx, &wg, true)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Error("claim webhooks", "err", err)
			}
			return
		}
		if n == 0 {
			return
		}
	}
}

// startDueWebhooks takes the free delivery slots (waiting for one first when wait is set), leases as many
// due webhooks as it took slots, and starts a delivery for each, which frees its slot and kicks the loop
// when it ends. It returns how many deliveries it started. A webhook is leased only when a slot is free
// for it, so its delivery starts within its lease.
func (c *Coordinator) startDueWebhooks(ctx context.Context, wg *sync.WaitGroup, wait bool) (int, error) {
	n := 0
	if wait {
		select {
		case c.webhookSlots <- struct{}{}:
			n = 1
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
take:
	for n < cap(c.webhookSlots) {
		select {
		case c.webhookSlots <- struct{}{}:
			n++
		default:
			break take
		}
	}
	if n == 0 {
		return 0, nil // every slot is busy: a delivery that ends kicks the loop
	}
	now := c.now()
	due, err := c.store.ClaimWebhooks(ctx, now, now.Add(2*c.cfg.WebhookTimeout+time.Second), n)
	for range n - len(due) {
		<-c.webhookSlots
	}
	if err != nil {
		return 0, err
	}
	for _, w := range due {
		wg.Go(func() {
			defer func() {
				<-c.webhookSlots
				c.kickWebhooks()
			}()
			c.deliverWebhook(ctx, w)
		})
	}
	return len(due), nil
}

func (c *Coordinator) deliverWebhook(ctx context.Context, w *store.Webhook) {
	err := c.postWebhook(ctx, w)
	now := c.now()
	w.Attempts++
	switch {
	case err == nil:
		w.Status, w.DeliveredAt, w.LastError = store.WebhookDelivered, &now, ""
	case ctx.Err() != nil:
		return // shutting down: the lease expires and the attempt is made again
	default:
		w.LastError = err.Error()
		var perm permanentError
		if errors.As(err, &perm) || egress.IsRefused(err) || w.Attempts >= c.cfg.WebhookMaxAttempts {
			w.Status = store.WebhookFailed
			c.log.Warn("webhook given up", "webhook", w.ID, "url", w.URL, "attempts", w.Attempts, "err", err)
		} else {
			w.NextAttemptAt = now.Add(webhookBackoff(w.Attempts))
		}
	}
	if err := c.store.UpdateWebhook(context.WithoutCancel(ctx), w); err != nil {
		c.log.Error("record webhook attempt", "webhook", w.ID, "err", err)
	}
	if c.metrics != nil {
		c.metrics.WebhookDelivery(webhookOutcome(w.Status))
	}
}

// permanentError is a delivery failure that retrying cannot fix.
type permanentError struct{ error }

// postWebhook makes one signed delivery attempt. A 2xx answer delivers; 4xx answers other than 408, 425
// and 429 are permanent (the receiver refuses this request, and will again), and so is a destination the
// egress policy refuses, before or when connecting; everything else is retried.
func (c *Coordinator) postWebhook(ctx context.Context, w *store.Webhook) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.WebhookTimeout)
	defer cancel()
	u, err := url.Parse(w.URL)
	if err != nil {
		return permanentError{err}
	}
	// Runs stored before the policy, or through another replica's allow-list, are checked again here.
	if err := c.egress.CheckURL(u); err != nil {
		return permanentError{err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(w.Payload))
	if err != nil {
		return permanentError{err}
	}
	now := time.Now()
	sig, err := webhook.Sign(string(c.cfg.WebhookSecret), w.ID, now, w.Payload)
	if err != nil {
		return permanentError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agent-orchestrator-webhook/1")
	req.Header.Set(webhook.HeaderID, w.ID)
	req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(webhook.HeaderSignature, sig)
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

// webhookClient is the default Config.WebhookClient: it connects only where policy allows
// (checked on the address dialled), never through a proxy (the proxy's address would be the one
// checked), and does not follow redirects (a redirect could point anywhere; the receiver should update
// its callback_url instead).
func webhookClient(policy *egress.Policy) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           policy.DialContext(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}),
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// webhookOutcome names an attempt's outcome for [Metrics.WebhookDelivery].
func webhookOutcome(s store.WebhookStatus) string {
	switch s {
	case store.WebhookDelivered:
		return "delivered"
	case store.WebhookFailed:
		return "failed"
	}
	return "retry"
}

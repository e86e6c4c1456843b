package storetest

import (
	"encoding/json"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

func testCallbacks(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("CreateListDeliver", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		res := &orchestrator.Result{ResultType: "deterministic", ResultText: "ok", ResultData: json.RawMessage(`{"n":1}`), ExitCode: ptr(0)}
		cbs := []*orchestrator.Callback{
			{ID: "cb_9", ParentSessionID: "ses_p", ChildSessionID: "ses_c1", Type: "child_completed", ChildAgent: "crawl", Result: res, CreatedAt: at(1)},
			{ID: "cb_8", ParentSessionID: "ses_p", ChildSessionID: "ses_c2", Type: "child_failed", ChildAgent: "crawl", CreatedAt: at(2)},
			{ID: "cb_7", ParentSessionID: "ses_q", ChildSessionID: "ses_c3", Type: "child_stopped", CreatedAt: at(3)},
			{ID: "cb_6", ParentSessionID: "ses_p", ChildSessionID: "ses_c3", Type: "child_completed", CreatedAt: at(4),
				DeliveredAt: ptr(at(5)), DeliveredRun: "run_old"},
		}
		for _, c := range cbs {
			must(t, "CreateCallback "+c.ID, s.CreateCallback(ctx(t), c))
		}
		wantErr(t, "CreateCallback with a taken id", s.CreateCallback(ctx(t), cbs[0]), orchestrator.ErrConflict)

		got, err := s.ListCallbacks(ctx(t), store.CallbackFilter{})
		must(t, "ListCallbacks", err)
		equal(t, "ListCallbacks all", got, cbs)
		for _, tc := range []struct {
			name string
			f    store.CallbackFilter
			want []string
		}{
			{"parent", store.CallbackFilter{ParentSessionID: "ses_p"}, []string{"cb_9", "cb_8", "cb_6"}},
			{"parent, pending", store.CallbackFilter{ParentSessionID: "ses_p", Pending: true}, []string{"cb_9", "cb_8"}},
			{"child", store.CallbackFilter{ChildSessionID: "ses_c3"}, []string{"cb_7", "cb_6"}},
			{"pending", store.CallbackFilter{Pending: true}, []string{"cb_9", "cb_8", "cb_7"}},
		} {
			got, err := s.ListCallbacks(ctx(t), tc.f)
			must(t, "ListCallbacks "+tc.name, err)
			equal(t, "ListCallbacks "+tc.name, callbackIDs(got), tc.want)
		}

		n, err := s.MarkCallbacksDelivered(ctx(t), []string{"cb_9", "cb_8", "cb_6", "cb_missing"}, "run_new", at(10))
		must(t, "MarkCallbacksDelivered", err)
		if n != 2 {
			t.Fatalf("MarkCallbacksDelivered = %d, want 2 (one was delivered already, one does not exist)", n)
		}
		n, err = s.MarkCallbacksDelivered(ctx(t), []string{"cb_9"}, "run_newer", at(11))
		if err != nil || n != 0 {
			t.Fatalf("MarkCallbacksDelivered again = %d, %v; want 0, nil", n, err)
		}
		if n, err := s.MarkCallbacksDelivered(ctx(t), nil, "run_x", at(11)); err != nil || n != 0 {
			t.Fatalf("MarkCallbacksDelivered of nothing = %d, %v; want 0, nil", n, err)
		}
		got, err = s.ListCallbacks(ctx(t), store.CallbackFilter{ParentSessionID: "ses_p"})
		must(t, "ListCallbacks", err)
		cbs[0].DeliveredAt, cbs[0].DeliveredRun = ptr(at(10)), "run_new"
		cbs[1].DeliveredAt, cbs[1].DeliveredRun = ptr(at(10)), "run_new"
		equal(t, "callbacks after delivery", got, []*orchestrator.Callback{cbs[0], cbs[1], cbs[3]})
		if p, _ := s.ListCallbacks(ctx(t), store.CallbackFilter{ParentSessionID: "ses_p", Pending: true}); len(p) != 0 {
			t.Fatalf("pending callbacks after delivery: %v", callbackIDs(p))
		}
	})
}
